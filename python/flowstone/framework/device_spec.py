"""tf.DeviceSpec: a device name as fields (job, replica, task, device type and index).

Parsing and merging use the C++ device-name parser, so a DeviceSpec accepts exactly the names
tf.device accepts and prints them in the same canonical form.
"""

from flowstone import _C
from flowstone import errors as _errors
from flowstone.util.tf_export import tf_export


def _canonical(spec):
    try:
        return _C.merge_device_specs("", spec)
    except _C.StatusError as e:
        raise _errors.from_status_error(e, as_op_error=False) from None


@tf_export("DeviceSpec")
class DeviceSpec:
    """`DeviceSpec(job="ps", task=1, device_type="CPU", device_index=0)` is
    "/job:ps/task:1/device:CPU:0". TF1's form: `parse_from_string` and `merge_from` change the
    spec in place."""

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self.job = job
        self.replica = None if replica is None else int(replica)
        self.task = None if task is None else int(task)
        self.device_type = (device_type.upper() if isinstance(device_type, str) and
                            device_type.lower() in ("cpu", "gpu") else device_type)
        self.device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec):
        return cls().parse_from_string(spec)

    def parse_from_string(self, spec):
        """Sets the fields `spec` names (others keep their values); returns self."""
        for part in _canonical(spec or "").split("/")[1:]:
            key, _, value = part.partition(":")
            if key == "job":
                self.job = value
            elif key == "replica":
                self.replica = int(value)
            elif key == "task":
                self.task = int(value)
            elif key == "device":
                device_type, _, index = value.partition(":")
                self.device_type = device_type
                self.device_index = None if index in ("", "*") else int(index)
        return self

    def merge_from(self, dev):
        """Takes every field `dev` sets."""
        for field in ("job", "replica", "task", "device_type", "device_index"):
            value = getattr(dev, field)
            if value is not None:
                setattr(self, field, value)

    def make_merged_spec(self, dev):
        merged = self.replace()
        merged.merge_from(dev)
        return merged

    def replace(self, **kwargs):
        fields = dict(job=self.job, replica=self.replica, task=self.task,
                      device_type=self.device_type, device_index=self.device_index)
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def to_string(self):
        parts = []
        if self.job is not None:
            parts.append(f"/job:{self.job}")
        if self.replica is not None:
            parts.append(f"/replica:{self.replica}")
        if self.task is not None:
            parts.append(f"/task:{self.task}")
        if self.device_type is not None:
            index = "*" if self.device_index is None else self.device_index
            parts.append(f"/device:{self.device_type}:{index}")
        return "".join(parts)

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self):
        return hash(self.to_string())

    def __repr__(self):
        return f"<DeviceSpec {self.to_string()!r}>"
