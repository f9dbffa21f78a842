"""Which backend fits: the hardware, a memory plan from the model config, and the choice."""
