"""`flowstone doctor`: one screen that explains what this machine can run and why.

`collect()` gathers the facts (build, CPU, environment, GPU discovery) into a dict, which
`--json` prints as is; `render()` turns it into at most about 30 lines ending in a verdict with
the fix. The verdict logic works on the dict alone, so tests can feed it any discovery result.
"""

import json
import os
import platform
import sys

import flowstone
from flowstone import _C
from flowstone import _cpu_check

# The instruction sets the doctor reports, by _C.cpu_info() name.
_ISA_NAMES = ["sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "amx-tile",
              "amx-bf16", "amx-int8"]
_CPU_ONLY = "ops run on the CPU"


def _gpu_discovery():
    """The core's discovery result, or None when this build has no `_C.gpu_discovery`. The
    doctor's screen says what discovery's log lines would, so they are held back."""
    discover = getattr(_C, "gpu_discovery", None)
    if discover is None:
        return None
    saved = os.environ.get("TF_CPP_MIN_LOG_LEVEL")
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    try:
        return discover(read_free_memory=True)
    finally:
        if saved is None:
            del os.environ["TF_CPP_MIN_LOG_LEVEL"]
        else:
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = saved


def _build_info():
    return _C.build_info()


def _version_tuple(version):
    """"13.0" -> (13, 0); "9" -> (9,); "" or junk -> ()."""
    parts = []
    for piece in str(version).split("."):
        digits = "".join(c for c in piece if c.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def versions_compatible(library_name, found, built):
    """Whether a library version found at run time serves a backend built against `built`.

    The driver must support at least the CUDA major version the backend was built with; the
    other libraries must have the same major version (their minor versions are compatible)."""
    found_v, built_v = _version_tuple(found), _version_tuple(built)
    if not found_v or not built_v:
        return True  # a version that is not known cannot be called a mismatch
    if library_name == "CUDA driver":
        return found_v[0] >= built_v[0]
    return found_v[0] == built_v[0]


def library_verdict(lib):
    """"ok", "mismatch", "missing", or "not checked" (discovery did not try to load it)."""
    if lib.get("found_version") and not versions_compatible(
            lib["name"], lib["found_version"], lib.get("built_version", "")):
        return "mismatch"
    if lib.get("loaded"):
        return "ok"
    return "missing" if lib.get("error") else "not checked"


def gpu_usable(discovery):
    return bool(discovery and discovery.get("devices") and not discovery.get("reason"))


def _hidden_by_environment(visible):
    return visible is not None and visible.strip() in ("", "-1")


def _library_fix(lib, build):
    name, built = lib["name"], lib.get("built_version") or ""
    verdict = library_verdict(lib)
    if name == "CUDA driver":
        if verdict == "mismatch":
            return (f"the NVIDIA driver supports CUDA {lib['found_version']}, but the backend "
                    f"was built with CUDA {built} -> update the NVIDIA driver; {_CPU_ONLY}")
        return f"no CUDA driver: {lib['file']} not found -> install the NVIDIA driver; {_CPU_ONLY}"
    wanted = f"{name} {_version_tuple(built)[0]}" if _version_tuple(built) else name
    if verdict == "mismatch":
        return (f"{name} {lib['found_version']} found ({lib.get('path') or lib['file']}), but the "
                f"backend was built with {built} -> install {wanted} or put its directory first "
                f"in LD_LIBRARY_PATH; {_CPU_ONLY}")
    cuda = build.get("cuda_version") or ""
    for_cuda = f" for CUDA {_version_tuple(cuda)[0]}" if _version_tuple(cuda) else ""
    return (f"{name} not found: {lib['file']} -> install {wanted}{for_cuda} or add its directory "
            f"to LD_LIBRARY_PATH; {_CPU_ONLY}")


def verdict(report):
    """The last line's text: whether a GPU is usable, and if not, why and how to fix it."""
    build, discovery = report["build"], report["gpu_discovery"]
    if discovery is not None and gpu_usable(discovery):
        devices = discovery["devices"]
        names = ", ".join(f"GPU {d['ordinal']}: {d['name']}" for d in devices)
        return (f"ok: {len(devices)} GPU{'s' if len(devices) > 1 else ''} usable ({names}); "
                f"ops without a device pin run on /device:GPU:0")
    if not build["built_with_cuda"]:
        return ("CPU only: this build has no CUDA backend -> build from source on a machine with "
                f"the CUDA toolkit (nvcc) to use a GPU; {_CPU_ONLY}")
    if report.get("gpu_discovery_error"):
        return (f"GPU discovery failed: {report['gpu_discovery_error']} -> report this with the "
                f"output of `flowstone doctor --json`; {_CPU_ONLY}")
    if discovery is None:
        return f"CPU only: this build cannot look for GPUs (no GPU discovery); {_CPU_ONLY}"
    libraries = discovery.get("libraries", [])
    driver = [lib for lib in libraries if lib["name"] == "CUDA driver"]
    required = [lib for lib in libraries if lib.get("required") and lib["name"] != "CUDA driver"]
    for lib in driver + required:
        if library_verdict(lib) in ("mismatch", "missing"):
            return _library_fix(lib, build)
    backend = discovery.get("backend") or {}
    if backend.get("error") and not backend.get("loaded"):
        return (f"the CUDA backend {backend.get('path') or 'libflowstone_cuda.so'} did not load: "
                f"{backend['error']} -> reinstall Flowstone; {_CPU_ONLY}")
    visible = discovery.get("cuda_visible_devices")
    if _hidden_by_environment(visible):
        return (f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU -> unset it or list the GPUs "
                f"to use; {_CPU_ONLY}")
    reason = discovery.get("reason") or "no GPU was found"
    return f"no usable GPU: {reason} -> check the GPU with nvidia-smi; {_CPU_ONLY}"


def collect():
    """Everything the doctor knows, as plain data (what --json prints)."""
    cpu = dict(_C.cpu_info())
    _, model = _cpu_check.read_cpuinfo()
    cpu["model"] = cpu["brand"] or model or platform.processor() or "unknown"
    cpu["cores"] = _C.num_schedulable_cpus()
    cpu["memory_bytes"] = _C.physical_memory_bytes()
    discovery_error = None
    try:
        discovery = _gpu_discovery()
    except Exception as e:  # noqa: BLE001 - the doctor reports a failing discovery, never dies
        discovery, discovery_error = None, f"{type(e).__name__}: {e}"
    if discovery is not None:
        discovery = dict(discovery)
        discovery["libraries"] = [dict(lib, verdict=library_verdict(lib))
                                  for lib in discovery.get("libraries", [])]
    report = {
        "flowstone_version": flowstone.__version__,
        "python_version": platform.python_version(),
        "build": dict(_build_info()),
        "cpu": cpu,
        "environment": {name: os.environ.get(name)
                        for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")},
        "gpu_discovery": discovery,
        "gpu_discovery_error": discovery_error,
    }
    report["gpu_usable"] = gpu_usable(discovery)
    report["verdict"] = verdict(report)
    return report


def _gib(n):
    return f"{n / 2**30:.1f} GiB"


def _environment_lines(env):
    visible = env["CUDA_VISIBLE_DEVICES"]
    if visible is None:
        shown = "(unset: every GPU is visible)"
    elif _hidden_by_environment(visible):
        shown = f"{visible!r} (hides every GPU)"
    else:
        shown = visible
    return [f"CUDA_VISIBLE_DEVICES: {shown}",
            f"LD_LIBRARY_PATH: {env['LD_LIBRARY_PATH'] or '(unset)'}"]


def _cpu_lines(report):
    cpu, build = report["cpu"], report["build"]
    found = [n for n in _ISA_NAMES if n in cpu["features"]]
    absent = [n for n in _ISA_NAMES if n not in cpu["features"]]
    vendor = f" ({cpu['vendor']})" if cpu["vendor"] else ""
    return [
        f"CPU: {cpu['model']}{vendor}, {cpu['cores']} cores, {_gib(cpu['memory_bytes'])} memory",
        f"  ISA found: {' '.join(found) or 'none of the x86 extensions'}"
        + (f"; absent: {' '.join(absent)}" if absent else ""),
        f"  kernels: {build['baseline_isa']} baseline (the build's); {cpu['kernel_isa']} for "
        f"{', '.join(cpu['dispatched_kernels'])}",
    ]


def _backend_line(build, discovery):
    if not build["built_with_cuda"]:
        return "CUDA backend: not built (no CUDA toolkit at build time)"
    line = f"CUDA backend: built with CUDA {build['cuda_version']}, cuDNN {build['cudnn_major']}"
    backend = (discovery or {}).get("backend") or {}
    if backend.get("loaded"):
        return line + f"; loaded from {backend['path']}"
    if backend.get("error"):
        return line + f"; not loaded: {backend['error']}"
    return line + "; not loaded"


def _library_line(lib):
    found = lib.get("found_version") or "-"
    where = f" ({lib['path']})" if lib.get("path") else ""
    if lib["verdict"] == "missing" and lib.get("error"):
        where = f" ({lib['error']})"
    optional = "" if lib.get("required") else " (optional)"
    return (f"  {lib['name']:<14}{lib['verdict']:<12} found {found} vs built "
            f"{lib.get('built_version') or '-'}{where}{optional}")


def _gpu_lines(discovery):
    lines = [f"Driver: {discovery.get('driver_version') or 'none'}",
             f"Library search path: {':'.join(discovery.get('search_path', [])) or '(default)'}"]
    lines += [_library_line(lib) for lib in discovery.get("libraries", [])]
    devices = discovery.get("devices", [])
    if not devices:
        lines.append("GPUs: none")
    for d in devices:
        lines.append(f"GPU {d['ordinal']}: {d['name']}, compute capability "
                     f"{d['compute_capability']}, {_gib(d['total_memory'])} total, "
                     f"{_gib(d['free_memory'])} free, {d['multiprocessor_count']} SMs, "
                     f"PCI {d['pci_bus_id']}")
    return lines


def render(report):
    """The doctor's screen, as a list of lines."""
    build, discovery = report["build"], report["gpu_discovery"]
    lines = [f"Flowstone {report['flowstone_version']} on Python {report['python_version']} "
             f"(built with {build['compiler']} {build['compiler_version']})"]
    lines += _cpu_lines(report)
    lines += _environment_lines(report["environment"])
    lines.append(_backend_line(build, discovery))
    if report.get("gpu_discovery_error"):
        lines.append(f"GPU discovery: failed: {report['gpu_discovery_error']}")
    elif discovery is None:
        lines.append("GPU discovery: not available in this build")
    else:
        lines += _gpu_lines(discovery)
    lines.append(f"Verdict: {report['verdict']}")
    return lines


def run(as_json=False, require=None):
    """Prints the report; returns the exit code: 1 when `require` is "gpu" and none is usable."""
    report = collect()
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print("\n".join(render(report)))
    if require == "gpu" and not report["gpu_usable"]:
        print(f"flowstone doctor: --require gpu: no usable GPU: {report['verdict']}",
              file=sys.stderr)
        return 1
    return 0
