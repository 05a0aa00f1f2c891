"""Checks, before the compiled extension loads, that this CPU can run the build.

Pure Python on purpose: code compiled for instructions the CPU lacks dies with SIGILL as soon
as it runs, so the check must happen before `flowstone._C` is imported. The required flags come
from `_build_config.py`, which CMake writes from the build's FLOWSTONE_BASELINE_ISA.
"""

# /proc/cpuinfo names that are not the instruction sets' usual names.
_FLAG_NAMES = {"pni": "SSE3", "abm": "LZCNT", "lahf_lm": "LAHF/SAHF", "cx16": "CMPXCHG16B",
               "sse4_1": "SSE4.1", "sse4_2": "SSE4.2", "avx512f": "AVX-512F",
               "avx512bw": "AVX-512BW", "avx512cd": "AVX-512CD", "avx512dq": "AVX-512DQ",
               "avx512vl": "AVX-512VL"}


def flag_name(flag):
    """The usual name of a /proc/cpuinfo flag: "avx2" -> "AVX2", "pni" -> "SSE3"."""
    return _FLAG_NAMES.get(flag, flag.upper())


def read_cpuinfo(path="/proc/cpuinfo"):
    """Returns (flags, model name) of the first CPU in /proc/cpuinfo, or (None, None)."""
    flags, model = None, None
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "flags" and flags is None:
                    flags = set(value.split())
                elif key == "model name" and model is None:
                    model = value.strip()
                if flags is not None and model is not None:
                    break
    except OSError:
        pass
    return flags, model


def missing_flags(required, present):
    """The required CPU flags absent from `present`, in the order they are required."""
    return [flag for flag in required if flag not in present]


def unsupported_cpu_message(missing, baseline_isa, cpu_model):
    missing_names = ", ".join(flag_name(flag) for flag in missing)
    return (f"This Flowstone build needs a {baseline_isa} CPU, but this CPU "
            f"({cpu_model or 'unknown model'}) lacks {missing_names}. Importing it would "
            f"crash on an illegal instruction. Install a Flowstone build for x86-64, or build "
            f"from source for this machine: cmake -DFLOWSTONE_BASELINE_ISA=x86-64 (pip install "
            f"-Ccmake.define.FLOWSTONE_BASELINE_ISA=x86-64 .).")


def check_cpu(required, baseline_isa, cpuinfo_path="/proc/cpuinfo"):
    """Raises ImportError when the CPU lacks a flag in `required`. Skipped where there is no
    /proc/cpuinfo (not Linux): pure Python has no other way to ask the CPU."""
    if not required:
        return
    flags, model = read_cpuinfo(cpuinfo_path)
    if flags is None:
        return
    missing = missing_flags(required, flags)
    if missing:
        raise ImportError(unsupported_cpu_message(missing, baseline_isa, model))


def check_this_build():
    """Checks the CPU against this build's `_build_config.py`, when the build wrote one."""
    try:
        from flowstone import _build_config
    except ImportError:
        return
    check_cpu(_build_config.REQUIRED_CPU_FLAGS, _build_config.BASELINE_ISA)
