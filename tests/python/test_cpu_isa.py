"""The CPU checks: CPUID detection (_C.cpu_info), the build's required flags, and the pure-Python
import-time check that turns a missing instruction set into an ImportError."""

import os
import subprocess
import sys

import pytest

import flowstone as tf
from flowstone import _C, _build_config, _cpu_check

# x86-64-v3 as /proc/cpuinfo names it, on top of v2; what the AVX2 kernel clones require.
V3_FLAGS = ["sse", "sse2", "cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2", "avx",
            "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"]
# A Sandy Bridge: AVX but no AVX2, FMA or BMI (the seed's "built for AVX2, CPU has only AVX").
SANDY_BRIDGE_FLAGS = ["fpu", "sse", "sse2", "cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1",
                      "sse4_2", "avx", "xsave"]


def write_cpuinfo(tmp_path, flags, model="Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz"):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: {model}\n"
                    f"flags\t\t: {' '.join(flags)}\n\nprocessor\t: 1\nflags\t\t: sse\n")
    return str(path)


def proc_cpu_flags():
    flags, _ = _cpu_check.read_cpuinfo()
    if flags is None:
        pytest.skip("no /proc/cpuinfo on this system")
    return flags


def test_missing_flags_keeps_the_required_order():
    assert _cpu_check.missing_flags(V3_FLAGS, set(SANDY_BRIDGE_FLAGS)) == [
        "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe"]
    assert _cpu_check.missing_flags(V3_FLAGS, set(V3_FLAGS) | {"avx512f"}) == []
    assert _cpu_check.missing_flags([], set()) == []


def test_cpu_lacking_the_builds_isa_gets_an_import_error_with_the_fix(tmp_path):
    path = write_cpuinfo(tmp_path, SANDY_BRIDGE_FLAGS)
    with pytest.raises(ImportError) as e:
        _cpu_check.check_cpu(V3_FLAGS, "x86-64-v3", cpuinfo_path=path)
    message = str(e.value)
    assert "needs a x86-64-v3 CPU" in message
    assert "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz" in message
    assert "AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE" in message
    assert "-DFLOWSTONE_BASELINE_ISA=x86-64" in message


def test_check_passes_when_every_flag_is_present(tmp_path):
    path = write_cpuinfo(tmp_path, V3_FLAGS + ["avx512f"])
    _cpu_check.check_cpu(V3_FLAGS, "x86-64-v3", cpuinfo_path=path)


def test_check_is_skipped_without_proc_cpuinfo_or_requirements(tmp_path):
    _cpu_check.check_cpu(V3_FLAGS, "x86-64-v3", cpuinfo_path=str(tmp_path / "absent"))
    _cpu_check.check_cpu([], "x86-64", cpuinfo_path=write_cpuinfo(tmp_path, []))


def test_only_the_first_cpus_flags_and_model_are_read(tmp_path):
    flags, model = _cpu_check.read_cpuinfo(write_cpuinfo(tmp_path, ["sse", "avx"], model="M"))
    assert flags == {"sse", "avx"}
    assert model == "M"


def test_build_config_matches_the_build_and_this_cpu():
    assert _build_config.BASELINE_ISA == _C.build_info()["baseline_isa"]
    assert tf.sysconfig.get_build_info()["baseline_isa"] == _build_config.BASELINE_ISA
    if _build_config.BASELINE_ISA == "x86-64":
        assert _build_config.REQUIRED_CPU_FLAGS == ["sse", "sse2"]
    assert not _cpu_check.missing_flags(_build_config.REQUIRED_CPU_FLAGS, proc_cpu_flags())


def test_import_flowstone_in_a_fresh_process():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", "import flowstone as tf; print(tf.__version__)"],
                         capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == tf.__version__


def test_cpuid_features_agree_with_the_kernel():
    flags = proc_cpu_flags()
    info = _C.cpu_info()
    if "sse2" not in flags:
        assert info["features"] == []
        return
    proc_names = {"sse4.2": "sse4_2", "avx": "avx", "avx2": "avx2", "fma": "fma",
                  "avx512f": "avx512f", "avx512bw": "avx512bw", "avx512vl": "avx512vl",
                  "amx-tile": "amx_tile", "amx-bf16": "amx_bf16", "amx-int8": "amx_int8"}
    expected = [name for name, flag in proc_names.items() if flag in flags]
    assert info["features"] == expected
    assert info["vendor"] in ("GenuineIntel", "AuthenticAMD", "HygonGenuine")
    assert info["brand"] == _cpu_check.read_cpuinfo()[1]


def test_kernel_isa_is_the_avx2_clone_exactly_on_x86_64_v3_cpus():
    flags = proc_cpu_flags()
    info = _C.cpu_info()
    if "sse2" not in flags:
        assert info["kernel_isa"] == "baseline"
        return
    has_v3 = not _cpu_check.missing_flags(V3_FLAGS, flags)
    assert info["kernel_isa"] == ("avx2+fma" if has_v3 else "baseline")
    assert "ResourceApplyAdam" in info["dispatched_kernels"]


def test_import_fails_cleanly_before_loading_the_extension_on_a_cpu_without_the_builds_isa():
    # A stand-in _build_config demanding an instruction set no CPU has: the ImportError must come
    # before flowstone._C (the code that would die on an illegal instruction) is loaded.
    script = (
        "import sys, types\n"
        "config = types.ModuleType('flowstone._build_config')\n"
        "config.BASELINE_ISA = 'x86-64-v9'\n"
        "config.REQUIRED_CPU_FLAGS = ['sse2', 'no_such_isa']\n"
        "sys.modules['flowstone._build_config'] = config\n"
        "try:\n"
        "    import flowstone\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
        "print('_C loaded:', 'flowstone._C' in sys.modules)\n")
    proc_cpu_flags()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         check=True).stdout
    assert "ImportError: This Flowstone build needs a x86-64-v9 CPU" in out
    assert "lacks NO_SUCH_ISA" in out
    assert "_C loaded: False" in out
