# Set up a bare GPU machine for bench/gpu_acceptance.py; source it at the start of every command.
#
#   . bench/gpu_setup.sh [WHEEL_DIR ...]      # default: bench/wheels and bench/wheels-pyarrow, if there
#
# Why: the lent GPU machines start bare each time (installs vanish when one is given back), have
# no internet and lack trl, datasets, liger-kernel, deepspeed, gymnasium, RestrictedPython,
# pyseccomp, ... (bench/gather_wheels.py gathers their wheels here). Sourced, not run, because
# DeepSpeed's cpu_adam JIT build calls `ninja --version` through PATH: the interpreter's bin/
# (where pip puts ninja) must be on the caller's PATH, not a child's. Idempotent: pip keeps what
# already satisfies the pins, and the project is reinstalled only when it imports from elsewhere.
#
# It says plainly what is missing (a C or C++ compiler, Python.h, ninja, an import, CUDA, a Triton
# kernel that compiles and runs; nvcc/CUDA_HOME are reported, no run needs them) and returns 1
# then, 0 when all is there; it never exits the caller's shell. PYTHON picks the
# interpreter (default: python3, the one holding torch on those machines). With $OUT set, the
# report is also written to $OUT/gpu_setup.txt (it comes back with the command's files).

_GS_PYARROW_FLOOR="pyarrow>=24.0.0"  # datasets 5.2's pin (trl 1.16 asks >= 21)

_gpu_setup() {
    local py="${PYTHON:-python3}" root problems=() dirs=() line
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    _gs_say() { printf '%s\n' "$*"; }
    _gs_missing() { problems+=("$*"); _gs_say "MISSING: $*"; }

    if ! command -v "$py" >/dev/null 2>&1; then
        _gs_say "MISSING: no Python interpreter '$py' on PATH (set PYTHON)"
        return 1
    fi
    py="$(command -v "$py")"

    # 1. The interpreter's bin/ and scripts/ on PATH (ninja, torchrun, accelerate, deepspeed).
    local bin scripts
    bin="$("$py" -c 'import os, sys; print(os.path.dirname(sys.executable))')"
    scripts="$("$py" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
    for line in "$scripts" "$bin"; do
        case ":$PATH:" in *":$line:"*) ;; *) PATH="$line:$PATH" ;; esac
    done
    export PATH
    _gs_say "python: $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"

    # 2. The carried wheels: dry-run first (says what would fail), then install what is missing.
    if [ "$#" -gt 0 ]; then
        dirs=("$@")
    else
        for line in "$root/bench/wheels" "$root/bench/wheels-pyarrow"; do
            [ -d "$line" ] && dirs+=("$line")
        done
    fi
    local links=() reqs=()
    for line in "${dirs[@]}"; do
        if [ -d "$line" ]; then links+=(--find-links "$line"); else _gs_missing "wheel folder $line (not carried?)"; fi
    done
    # pyarrow travels alone (40+ MiB) in its own call of a warm hold: install it on its own first.
    for line in "${dirs[@]}"; do
        if compgen -G "$line/pyarrow-*.whl" >/dev/null; then
            "$py" -m pip install -q --no-index --find-links "$line" "$_GS_PYARROW_FLOOR" \
                && _gs_say "pyarrow: $("$py" -c 'import pyarrow; print(pyarrow.__version__)')" \
                || _gs_missing "pyarrow's install from $line failed (pip's output above)"
        fi
    done
    mapfile -t reqs < <("$py" "$root/bench/gather_wheels.py" --requirements)
    if [ "${#reqs[@]}" -eq 0 ]; then
        _gs_missing "the requirement list (bench/gather_wheels.py --requirements printed nothing)"
    else
        local dry
        if dry="$("$py" -m pip install --dry-run --no-index "${links[@]}" "${reqs[@]}" 2>&1)"; then
            _gs_say "pip: $(printf '%s\n' "$dry" | grep '^Would install' || echo 'everything already satisfied')"
            if printf '%s\n' "$dry" | grep -q '^Would install'; then
                "$py" -m pip install -q --no-index "${links[@]}" "${reqs[@]}" \
                    || _gs_missing "the wheel install failed although its dry-run passed (pip's output above)"
            fi
        else
            _gs_missing "the carried wheels do not cover the requirements; pip says:"
            printf '%s\n' "$dry" | grep -E 'ERROR|requires|No matching|conflict' | head -n 12
            if printf '%s\n' "$dry" | grep -qi 'pyarrow'; then
                _gs_say "  -> the machine's pyarrow is older than datasets 5.2 needs: run"
                _gs_say "     'python bench/gather_wheels.py --pyarrow' here and source this script in a call that"
                _gs_say "     carries bench/wheels-pyarrow alone, then in one carrying bench/wheels (same warm hold)"
            fi
        fi
    fi

    # 3. The project itself, editable, with no download: no build isolation (else pip fetches
    #    setuptools), so pyproject's build requirements (setuptools >= 68) must be installed.
    local build=()
    mapfile -t build < <("$py" "$root/bench/gather_wheels.py" --build-requirements)
    if [ "${#build[@]}" -gt 0 ] && ! "$py" -m pip install -q --no-index "${links[@]}" "${build[@]}"; then
        _gs_missing "the build requirements ${build[*]} (pip's output above)"
    fi
    if "$py" -c "import rlvr_gym, sys; sys.exit(0 if rlvr_gym.__file__.startswith('$root/') else 1)" 2>/dev/null; then
        _gs_say "rlvr-gym: already imports from $root"
    elif "$py" -m pip install -q --no-deps --no-build-isolation --no-index -e "$root"; then
        _gs_say "rlvr-gym: installed editable from $root"
    else
        _gs_missing "rlvr-gym's editable install (pip install --no-deps --no-build-isolation -e .) failed"
    fi

    # 4. What the JIT builds need. DeepSpeed 0.19's cpu_adam (the CPU builder, on CUDA hosts too):
    #    torch's cpp_extension with $CXX (default c++), ninja on PATH, Python.h. Triton (TRL's
    #    log-prob kernel on CUDA, for every backend): its launcher stub with $CC, else gcc or clang,
    #    and Python.h. nvcc/CUDA_HOME only matter to CUDA ops (fused_adam, ...) that no run uses.
    local cc="${CC:-}" cxx="${CXX:-c++}"
    if [ -z "$cc" ]; then
        cc="$(command -v gcc || command -v clang || true)"
    fi
    if [ -n "$cc" ] && command -v "$cc" >/dev/null 2>&1; then
        _gs_say "C compiler (Triton): $(command -v "$cc") ($("$cc" -dumpfullversion 2>/dev/null || "$cc" -dumpversion 2>/dev/null))"
    else
        _gs_missing "a C compiler: gcc, clang or \$CC (Triton builds its kernel launcher with it)"
    fi
    if command -v "$cxx" >/dev/null 2>&1; then
        _gs_say "C++ compiler (DeepSpeed cpu_adam): $(command -v "$cxx") ($("$cxx" -dumpfullversion 2>/dev/null || "$cxx" -dumpversion 2>/dev/null))"
    else
        _gs_missing "a C++ compiler: $cxx (\$CXX; DeepSpeed's cpu_adam JIT build compiles with it)"
    fi
    local include
    include="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
    if [ -f "$include/Python.h" ]; then
        _gs_say "Python.h: $include/Python.h"
    else
        _gs_missing "Python.h in $include (the interpreter's headers: DeepSpeed's and Triton's builds include it)"
    fi
    if command -v ninja >/dev/null 2>&1 && ninja --version >/dev/null 2>&1; then
        _gs_say "ninja: $(command -v ninja) ($(ninja --version))"
    else
        _gs_missing "a ninja executable on PATH (the 'ninja' module alone is not enough for DeepSpeed's JIT build)"
    fi
    # CUDA_HOME, when unset: a folder with bin/nvcc and include/cuda_runtime.h — torch's guess,
    # nvcc's folder, then the usual places.
    if [ -z "${CUDA_HOME:-}" ]; then
        local candidate nvcc_home=""
        command -v nvcc >/dev/null 2>&1 && nvcc_home="$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")"
        for candidate in \
            "$("$py" -c 'from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME or "")' 2>/dev/null)" \
            "$nvcc_home" /usr/local/cuda /usr/local/cuda-*; do
            if [ -n "$candidate" ] && [ -x "$candidate/bin/nvcc" ] && [ -f "$candidate/include/cuda_runtime.h" ]; then
                CUDA_HOME="$candidate"
                export CUDA_HOME
                break
            fi
        done
    fi
    if command -v nvcc >/dev/null 2>&1; then
        _gs_say "nvcc: $(command -v nvcc) ($(nvcc --version | tail -n 1))"
    else
        _gs_say "note: no nvcc on PATH (only CUDA ops' JIT builds need it; no acceptance run does)"
    fi
    if [ -n "${CUDA_HOME:-}" ] && [ -f "$CUDA_HOME/include/cuda_runtime.h" ]; then
        _gs_say "CUDA_HOME: $CUDA_HOME"
    else
        _gs_say "note: CUDA_HOME ${CUDA_HOME:-unset} has no include/cuda_runtime.h (only CUDA ops' JIT builds need it)"
    fi
    local probe script
    script="$(mktemp --suffix=.py)"  # a file, not stdin: triton.jit reads its kernel's source
    cat >"$script" <<'PY'
import importlib
import importlib.metadata as metadata
for name in ("torch", "triton", "transformers", "accelerate", "peft", "trl", "datasets", "liger_kernel",
             "deepspeed", "gymnasium", "RestrictedPython", "pyseccomp", "rlvr_gym"):
    try:
        module = importlib.import_module(name)
        print(f"ok import {name} {getattr(module, '__version__', '')}")
    except Exception as exc:  # any failure to import is what the report is for
        print(f"fail import {name} {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}")
# versions gather_wheels.py --check can only assume: pass them back as --machine NAME=VERSION
read = []
for dist in ("pyarrow", "typing-extensions", "fsspec", "tqdm", "sympy", "setuptools", "packaging", "pandas",
             "psutil", "pyyaml", "jinja2", "filelock", "xxhash", "matplotlib", "huggingface-hub"):
    try:
        read.append(f"--machine {dist}={metadata.version(dist)}")
    except metadata.PackageNotFoundError:
        read.append(f"({dist} absent)")
print("ok read here: " + " ".join(read))
import torch
if torch.cuda.is_available():
    print(f"ok cuda: {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
    try:  # Triton's first kernel builds its launcher with the C compiler and Python.h
        import triton
        import triton.language as tl

        @triton.jit
        def _add_one(x, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x + offsets, tl.load(x + offsets, mask=offsets < n) + 1, mask=offsets < n)

        data = torch.arange(100, device="cuda", dtype=torch.float32)
        _add_one[(1,)](data, 100, BLOCK=128)
        ok = torch.equal(data.cpu(), torch.arange(1, 101, dtype=torch.float32))
        print("ok triton: a kernel compiled and ran" if ok else "fail triton: a kernel ran but gave wrong values")
    except Exception as exc:
        print(f"fail triton: a kernel did not compile or run: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}")
else:
    print("fail cuda: torch sees no CUDA device")
PY
    probe="$("$py" "$script" 2>&1)"
    rm -f "$script"
    while IFS= read -r line; do
        case "$line" in
            "ok "*) _gs_say "${line#ok }" ;;
            "fail "*) _gs_missing "${line#fail }" ;;
            *) _gs_say "  $line" ;;
        esac
    done <<<"$probe"

    if [ "${#problems[@]}" -eq 0 ]; then
        _gs_say "gpu_setup: ready"
    else
        _gs_say "gpu_setup: ${#problems[@]} missing (above)"
    fi
    return $(( ${#problems[@]} > 0 ))
}

if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
    _gpu_setup "$@" > >(tee -a "$OUT/gpu_setup.txt") 2>&1
else
    _gpu_setup "$@"
fi
