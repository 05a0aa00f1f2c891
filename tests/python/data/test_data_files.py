"""Files: TFRecord framing (checked against TensorFlow where it is installed), compression, the
text and fixed-length readers, read_file/write_file and list_files."""

import gzip
import os
import pickle
import subprocess
import sys
import textwrap
import zlib

import pytest

import flowstone as tf

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from peers import HAVE_PEER, PEER_PYTHON, SKIP_REASON  # noqa: E402
from dataset_drain import drain  # noqa: E402

RECORDS = [b"first", b"", b"x" * 100000, bytes(range(256))]


def _read_dataset(dataset):
    return drain(dataset, raise_errors=True)


def _write(path, records, options=None):
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for r in records:
            writer.write(r)


@pytest.mark.parametrize("compression", [None, "ZLIB", "GZIP"])
def test_records_round_trip_through_writer_iterator_and_dataset(tmp_path, compression):
    path = tmp_path / "data.tfrecord"
    _write(path, RECORDS, tf.io.TFRecordOptions(compression))
    assert list(tf.io.tf_record_iterator(str(path), tf.io.TFRecordOptions(compression))) == RECORDS
    assert _read_dataset(tf.data.TFRecordDataset(str(path), compression_type=compression)) == \
        RECORDS


def test_the_framing_is_tensorflows(tmp_path):
    # uint64 length, masked CRC-32C of the length, the data, masked CRC-32C of the data; the
    # masked CRCs are TF's formula over CRC-32C (RFC 3720 value of "abc": 0x364b3fb7).
    path = tmp_path / "one.tfrecord"
    _write(path, [b"abc"])
    data = path.read_bytes()
    assert len(data) == 8 + 4 + 3 + 4
    assert data[:8] == (3).to_bytes(8, "little") and data[12:15] == b"abc"

    def masked(crc):
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    assert int.from_bytes(data[15:], "little") == masked(0x364B3FB7)


def test_gzip_and_zlib_files_are_the_standard_formats(tmp_path):
    gz, zl = tmp_path / "a.gz", tmp_path / "a.zlib"
    _write(gz, RECORDS, "GZIP")
    _write(zl, RECORDS, tf.io.TFRecordCompressionType.ZLIB)
    plain = tmp_path / "a.plain"
    _write(plain, RECORDS)
    assert gzip.decompress(gz.read_bytes()) == plain.read_bytes()
    assert zlib.decompress(zl.read_bytes()) == plain.read_bytes()


def test_a_corrupted_record_is_data_loss_naming_the_file_and_offset(tmp_path):
    path = tmp_path / "bad.tfrecord"
    _write(path, [b"good", b"damaged"])
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF  # a byte of the second record's data (it starts at offset 20)
    path.write_bytes(bytes(data))
    records = tf.io.tf_record_iterator(str(path))
    assert next(records) == b"good"
    with pytest.raises(tf.errors.DataLossError, match=r"corrupted record at 20 in .*bad\.tfrecord"):
        next(records)
    with pytest.raises(tf.errors.DataLossError) as info:
        _read_dataset(tf.data.TFRecordDataset(str(path)))
    assert "corrupted record at 20" in str(info.value) and "TFRecordDataset" in str(info.value)
    path.write_bytes(bytes(data[:-3]))
    with pytest.raises(tf.errors.DataLossError, match="truncated record at 20"):
        list(tf.io.tf_record_iterator(str(path)))


def test_missing_file_is_not_found(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="No such file or directory"):
        _read_dataset(tf.data.TFRecordDataset(str(tmp_path / "missing")))
    with pytest.raises(tf.errors.NotFoundError, match="missing; No such file"):
        list(tf.io.tf_record_iterator(str(tmp_path / "missing")))


def test_text_lines_from_plain_and_gzip_files_in_order(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"one\r\ntwo\n\nlast without newline")
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(b"gz1\ngz2\n"))
    assert _read_dataset(tf.data.TextLineDataset(str(tmp_path / "a.txt"))) == [
        b"one", b"two", b"", b"last without newline"]
    assert _read_dataset(tf.data.TextLineDataset([str(tmp_path / "b.txt.gz")],
                                                 compression_type="GZIP")) == [b"gz1", b"gz2"]


def test_fixed_length_records_between_header_and_footer(tmp_path):
    path = tmp_path / "fixed.bin"
    path.write_bytes(b"HDR" + b"aaaabbbbcccc" + b"FT")
    got = _read_dataset(tf.data.FixedLengthRecordDataset(str(path), 4, header_bytes=3,
                                                         footer_bytes=2))
    assert got == [b"aaaa", b"bbbb", b"cccc"]


def test_read_write_and_matching_files(tmp_path):
    target = str(tmp_path / "out.bin")
    payload = b"\x00\x01binary\xff"
    with tf.Session() as sess:
        sess.run(tf.io.write_file(target, tf.constant(payload)))
        assert sess.run(tf.read_file(target)) == payload
        for name in ("c.txt", "a.txt", "b.log"):
            (tmp_path / name).write_bytes(b"")
        found = sess.run(tf.io.matching_files(str(tmp_path / "*.txt")))
        assert [os.path.basename(f) for f in found.tolist()] == [b"a.txt", b"c.txt"]
        with pytest.raises(tf.errors.NotFoundError, match="nothing.bin; No such file"):
            sess.run(tf.io.read_file(str(tmp_path / "nothing.bin")))


def test_list_files_and_a_dataset_of_file_names(tmp_path):
    for i in range(3):
        _write(tmp_path / f"part-{i}.tfrecord", [f"{i}-{k}".encode() for k in range(2)])
    pattern = str(tmp_path / "part-*.tfrecord")
    names = _read_dataset(tf.data.Dataset.list_files(pattern, shuffle=False))
    assert [os.path.basename(n) for n in names] == [b"part-0.tfrecord", b"part-1.tfrecord",
                                                    b"part-2.tfrecord"]
    shuffled = _read_dataset(tf.data.Dataset.list_files(pattern, seed=4))
    assert sorted(shuffled) == sorted(names)
    records = _read_dataset(tf.data.TFRecordDataset(
        tf.data.Dataset.list_files(pattern, shuffle=False)))
    assert records == [b"0-0", b"0-1", b"1-0", b"1-1", b"2-0", b"2-1"]
    interleaved = _read_dataset(tf.data.TFRecordDataset(
        tf.data.Dataset.list_files(pattern, shuffle=False), num_parallel_reads=2))
    assert interleaved == [b"0-0", b"1-0", b"0-1", b"1-1", b"2-0", b"2-1"]


def _peer(program):
    proc = subprocess.run([PEER_PYTHON, "-c", textwrap.dedent(program)], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.skipif(not HAVE_PEER, reason=SKIP_REASON)
@pytest.mark.parametrize("compression", ["", "GZIP", "ZLIB"])
def test_tensorflow_reads_our_records_and_we_read_its(tmp_path, compression):
    ours, theirs = tmp_path / "ours.tfrecord", tmp_path / "theirs.tfrecord"
    _write(ours, RECORDS, compression)
    with open(tmp_path / "records.pickle", "wb") as f:
        pickle.dump(RECORDS, f)
    out = _peer(f"""
        import pickle
        import tensorflow as tf
        expected = pickle.load(open({str(tmp_path / "records.pickle")!r}, "rb"))
        records = [r.numpy() for r in tf.data.TFRecordDataset({str(ours)!r},
                                                              compression_type={compression!r})]
        print(records == expected)
        with tf.io.TFRecordWriter({str(theirs)!r}, {compression!r}) as w:
            for r in expected:
                w.write(r)
    """)
    assert out.strip().splitlines()[-1] == "True"
    assert list(tf.io.tf_record_iterator(str(theirs), compression)) == RECORDS
    if not compression:
        assert ours.read_bytes() == theirs.read_bytes()
