"""Engine helpers the backends share: memory path, Liger loss, launcher, vLLM server."""
