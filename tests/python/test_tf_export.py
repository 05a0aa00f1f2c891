"""flowstone.util.tf_export: names land on their namespaces, new namespaces are importable, and a
name exported twice for different objects is refused."""

import sys
import types

import pytest

from flowstone.util import tf_export as export_table


def test_populate_sets_names_and_creates_namespaces(monkeypatch):
    monkeypatch.setattr(export_table, "_exports", {})
    root = types.ModuleType("fakeroot")
    monkeypatch.setitem(sys.modules, "fakeroot", root)

    @export_table.tf_export("deep.er.thing", "thing")
    def thing():
        return 42

    export_table.export_value("deep.CONSTANT", 7)
    export_table.populate(root)
    assert root.thing is thing
    assert root.deep.er.thing is thing
    assert root.deep.CONSTANT == 7
    assert sys.modules["fakeroot.deep.er"] is root.deep.er
    assert export_table.exported_names() == ["deep.CONSTANT", "deep.er.thing", "thing"]
    monkeypatch.delitem(sys.modules, "fakeroot.deep")
    monkeypatch.delitem(sys.modules, "fakeroot.deep.er")


def test_a_name_exported_for_two_objects_is_refused(monkeypatch):
    monkeypatch.setattr(export_table, "_exports", {})
    export_table.export_value("x", 1)
    export_table.export_value("x", 1)  # the same object again is fine
    with pytest.raises(ValueError, match="'x' is already exported"):
        export_table.export_value("x", 2)
    with pytest.raises(ValueError, match="at least one name"):
        export_table.tf_export()
