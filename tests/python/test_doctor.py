"""`flowstone doctor`: the screen, --json, exit codes, and the verdict for discovery results
(a GPU present, no driver, no cuDNN, a version mismatch) fed in place of the core's."""

import json
import os
import subprocess
import sys

import pytest

from flowstone import doctor


def run_doctor(*args, **env):
    environ = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **env)
    return subprocess.run([sys.executable, "-m", "flowstone", "doctor", *args],
                          capture_output=True, text=True, env=environ)


def library(name, file, loaded=True, found="", built="", error="", required=True, path=""):
    return {"name": name, "file": file, "required": required, "loaded": loaded,
            "path": path or (f"/usr/lib/{file}" if loaded else ""), "error": error,
            "found_version": found, "built_version": built}


def healthy_libraries():
    return [
        library("CUDA driver", "libcuda.so.1", found="13.0", built="13.0"),
        library("CUDA runtime", "libcudart.so.13", found="13.0", built="13.0"),
        library("cuBLAS", "libcublas.so.13", found="13.1", built="13.0"),
        library("cuBLASLt", "libcublasLt.so.13", found="13.1", built="13.0"),
        library("cuDNN", "libcudnn.so.9", found="9.10.2", built="9"),
    ]


def discovery(libraries, devices=(), reason="", visible=None, backend_loaded=True):
    return {
        "cuda_visible_devices": visible,
        "search_path": ["/usr/local/cuda/lib64"],
        "libraries": libraries,
        "backend": {"path": "/site/flowstone/libflowstone_cuda.so", "loaded": backend_loaded,
                    "error": ""},
        "platform": "CUDA" if devices else "",
        "driver_version": "580.65.06" if libraries[0]["loaded"] else "",
        "devices": list(devices),
        "reason": reason,
    }


H100 = {"ordinal": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
        "total_memory": 85 * 2**30, "free_memory": 84 * 2**30, "pci_bus_id": "0000:00:05.0",
        "multiprocessor_count": 132}


@pytest.fixture
def fake_machine(monkeypatch):
    """Makes the doctor see the given discovery result from a build with the CUDA backend."""
    def install(result):
        monkeypatch.setattr(doctor, "_gpu_discovery", lambda: result)
        monkeypatch.setattr(doctor, "_build_info", lambda: {
            "version": "0.1.0", "built_with_cuda": True, "cuda_version": "13.0",
            "cudnn_major": "9", "baseline_isa": "x86-64", "compiler": "gcc",
            "compiler_version": "12.2.0"})
        return doctor.collect()
    return install


def test_screen_shows_the_machine_and_ends_with_the_verdict():
    out = run_doctor(CUDA_VISIBLE_DEVICES="-1")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("Flowstone ")
    assert any(line.startswith("CPU: ") for line in lines)
    assert any(line.startswith("  ISA found: ") for line in lines)
    assert any("baseline (the build's)" in line for line in lines)
    assert "CUDA_VISIBLE_DEVICES: '-1' (hides every GPU)" in lines
    assert any(line.startswith("LD_LIBRARY_PATH: ") for line in lines)
    assert any(line.startswith("CUDA backend: ") for line in lines)
    assert lines[-1].startswith("Verdict: ")
    assert "ops run on the CPU" in lines[-1]
    assert len(lines) <= 32


def test_require_gpu_fails_when_no_gpu_is_usable():
    out = run_doctor("--require", "gpu", CUDA_VISIBLE_DEVICES="-1")
    assert out.returncode == 1
    assert "--require gpu: no usable GPU" in out.stderr
    assert out.stdout.splitlines()[-1].startswith("Verdict: ")


def test_require_cpu_succeeds():
    assert run_doctor("--require", "cpu", CUDA_VISIBLE_DEVICES="-1").returncode == 0


def test_json_has_the_same_data():
    out = run_doctor("--json", CUDA_VISIBLE_DEVICES="-1")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert set(report) >= {"flowstone_version", "python_version", "build", "cpu", "environment",
                           "gpu_discovery", "gpu_usable", "verdict"}
    assert report["environment"]["CUDA_VISIBLE_DEVICES"] == "-1"
    assert report["gpu_usable"] is False
    assert set(report["cpu"]) >= {"model", "vendor", "cores", "memory_bytes", "features",
                                  "kernel_isa", "dispatched_kernels"}
    assert set(report["build"]) >= {"built_with_cuda", "cuda_version", "cudnn_major",
                                    "baseline_isa", "compiler", "version"}


def test_gpu_present(fake_machine, monkeypatch, capsys):
    report = fake_machine(discovery(healthy_libraries(), devices=[H100]))
    assert report["gpu_usable"] is True
    assert report["verdict"].startswith("ok: 1 GPU usable (GPU 0: NVIDIA H100 80GB HBM3)")
    assert [lib["verdict"] for lib in report["gpu_discovery"]["libraries"]] == ["ok"] * 5
    lines = doctor.render(report)
    assert ("GPU 0: NVIDIA H100 80GB HBM3, compute capability 9.0, 85.0 GiB total, 84.0 GiB free,"
            " 132 SMs, PCI 0000:00:05.0") in lines
    assert "Driver: 580.65.06" in lines
    assert any(line.startswith("  cuDNN") and "ok" in line and "found 9.10.2 vs built 9" in line
               for line in lines)
    monkeypatch.setattr(doctor, "collect", lambda: report)
    assert doctor.run(require="gpu") == 0


def test_driver_missing(fake_machine, monkeypatch):
    libraries = healthy_libraries()
    libraries[0] = library("CUDA driver", "libcuda.so.1", loaded=False, built="13.0",
                           error="libcuda.so.1: cannot open shared object file")
    report = fake_machine(discovery(libraries, reason="no CUDA driver: libcuda.so.1 not found"))
    assert report["gpu_usable"] is False
    assert report["verdict"] == ("no CUDA driver: libcuda.so.1 not found -> install the NVIDIA "
                                 "driver; ops run on the CPU")
    assert report["gpu_discovery"]["libraries"][0]["verdict"] == "missing"
    assert "Driver: none" in doctor.render(report)
    monkeypatch.setattr(doctor, "collect", lambda: report)
    assert doctor.run(require="gpu") == 1
    assert doctor.run(require="cpu") == 0


def test_cudnn_missing(fake_machine):
    libraries = healthy_libraries()
    libraries[4] = library("cuDNN", "libcudnn.so.9", loaded=False, built="9",
                           error="libcudnn.so.9: cannot open shared object file")
    report = fake_machine(discovery(libraries, reason="cuDNN not found"))
    assert report["verdict"] == ("cuDNN not found: libcudnn.so.9 -> install cuDNN 9 for CUDA 13 "
                                 "or add its directory to LD_LIBRARY_PATH; ops run on the CPU")
    lines = doctor.render(report)
    assert any(line.startswith("  cuDNN") and "missing" in line and "cannot open" in line
               for line in lines)


def test_version_mismatch(fake_machine):
    libraries = healthy_libraries()
    libraries[4] = library("cuDNN", "libcudnn.so.9", found="8.9.7", built="9",
                           path="/opt/cudnn8/libcudnn.so.9")
    report = fake_machine(discovery(libraries, reason="cuDNN 8.9.7 found, 9 needed"))
    assert report["gpu_discovery"]["libraries"][4]["verdict"] == "mismatch"
    assert report["verdict"].startswith("cuDNN 8.9.7 found (/opt/cudnn8/libcudnn.so.9), but the "
                                        "backend was built with 9 -> install cuDNN 9")


def test_old_driver_is_a_mismatch_and_a_newer_one_is_fine():
    assert not doctor.versions_compatible("CUDA driver", "12.4", "13.0")
    assert doctor.versions_compatible("CUDA driver", "14.0", "13.0")
    assert not doctor.versions_compatible("CUDA runtime", "14.0", "13.0")
    assert doctor.versions_compatible("cuBLAS", "13.1", "13.0")
    assert doctor.versions_compatible("cuDNN", "", "9")


def test_hidden_by_cuda_visible_devices(fake_machine):
    report = fake_machine(discovery(healthy_libraries(), visible="-1",
                                    reason="CUDA_VISIBLE_DEVICES=-1 hides every GPU"))
    assert report["verdict"].startswith("CUDA_VISIBLE_DEVICES='-1' hides every GPU -> unset it")


def test_without_discovery_binding_the_doctor_still_reports(fake_machine):
    report = fake_machine(None)
    assert report["gpu_usable"] is False
    assert "no GPU discovery" in report["verdict"]
    assert "GPU discovery: not available in this build" in doctor.render(report)


def test_a_failing_discovery_is_reported_not_raised(monkeypatch):
    def broken():
        raise RuntimeError("cuInit failed: CUDA_ERROR_NO_DEVICE")
    monkeypatch.setattr(doctor, "_gpu_discovery", broken)
    report = doctor.collect()
    assert report["gpu_usable"] is False
    assert report["gpu_discovery_error"] == "RuntimeError: cuInit failed: CUDA_ERROR_NO_DEVICE"
    if report["build"]["built_with_cuda"]:
        assert report["verdict"].startswith("GPU discovery failed: RuntimeError: cuInit failed")
    assert "GPU discovery: failed: RuntimeError: cuInit failed: CUDA_ERROR_NO_DEVICE" in (
        doctor.render(report))
