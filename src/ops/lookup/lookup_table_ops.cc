// Lookup tables (tf.lookup): HashTableV2 (filled once by an initializer), MutableHashTableV2,
// MutableHashTableOfTensorsV2 (vector values) and MutableDenseHashTableV2 make a table in the
// session (or the eager context) on first run and output its handle, like the queues;
// LookupTableFind/Insert/Remove/Size/Export/ImportV2, InitializeTableV2 and
// InitializeTableFromTextFileV2 act on it.
//
// All kinds share one representation: keys encoded as bytes (a string key as itself, an integer
// key as its little-endian bytes) mapping to a host tensor of the table's value shape. The dense
// table's empty and deleted keys only mark free buckets in TensorFlow's open addressing, so here
// they are checked (never inserted or looked up, as TensorFlow requires) and otherwise unused.
#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/resource.h"
#include "flowstone/shape_inference.h"
#include "flowstone/variant.h"
#include "ops/resource_slot.h"

namespace flowstone {
namespace {

enum class TableKind { kHash, kMutable, kMutableOfTensors, kDense };

bool IsKeyType(DType d) { return d == DType::kInt32 || d == DType::kInt64 || d == DType::kString; }

std::string EncodeKey(const Tensor& keys, int64_t i) {
  switch (keys.dtype()) {
    case DType::kString:
      return keys.data<std::string>()[i];
    case DType::kInt32:
      return std::string(reinterpret_cast<const char*>(keys.data<int32_t>() + i), 4);
    default:
      return std::string(reinterpret_cast<const char*>(keys.data<int64_t>() + i), 8);
  }
}

void DecodeKey(const std::string& key, Tensor* keys, int64_t i) {
  switch (keys->dtype()) {
    case DType::kString:
      keys->data<std::string>()[i] = key;
      return;
    case DType::kInt32:
      std::memcpy(keys->data<int32_t>() + i, key.data(), 4);
      return;
    default:
      std::memcpy(keys->data<int64_t>() + i, key.data(), 8);
  }
}

// Orders encoded keys as their values order (numbers numerically), so exports are sorted.
bool KeyLess(DType dtype, const std::string& a, const std::string& b) {
  if (dtype == DType::kString) return a < b;
  if (dtype == DType::kInt32) {
    int32_t x, y;
    std::memcpy(&x, a.data(), 4);
    std::memcpy(&y, b.data(), 4);
    return x < y;
  }
  int64_t x, y;
  std::memcpy(&x, a.data(), 8);
  std::memcpy(&y, b.data(), 8);
  return x < y;
}

std::string KeyString(DType dtype, const std::string& key) {
  if (dtype == DType::kString) return key;
  if (dtype == DType::kInt32) {
    int32_t x;
    std::memcpy(&x, key.data(), 4);
    return std::to_string(x);
  }
  int64_t x;
  std::memcpy(&x, key.data(), 8);
  return std::to_string(x);
}

bool SameValue(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  if (a.dtype() == DType::kString) {
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) return false;
    }
    return true;
  }
  return std::memcmp(a.raw_data(), b.raw_data(), a.bytes()) == 0;
}

// Element `i` of `values` viewed as rows of `row` elements, copied into a tensor of `shape`.
Tensor RowOf(const Tensor& values, int64_t i, const TensorShape& shape) {
  Tensor row = Tensor::Host(values.dtype(), shape);
  const int64_t n = row.num_elements();
  const char* src = static_cast<const char*>(values.raw_data()) + i * n * DTypeSize(values.dtype());
  CopyElements(values.dtype(), src, row.raw_data(), n);
  return row;
}

void CopyRowInto(const Tensor& row, Tensor* out, int64_t i) {
  const int64_t n = row.num_elements();
  char* dst = static_cast<char*>(out->raw_data()) + i * n * DTypeSize(out->dtype());
  CopyElements(row.dtype(), row.raw_data(), dst, n);
}

TensorShape Concat(const TensorShape& a, const TensorShape& b) {
  TensorShape out = a;
  for (int64_t d : b.dims()) out.AddDim(d);
  return out;
}

using Entries = std::unordered_map<std::string, Tensor>;

class LookupTable {
 public:
  LookupTable(std::string name, TableKind kind, DType key_dtype, DType value_dtype,
              TensorShape value_shape)
      : name_(std::move(name)),
        kind_(kind),
        key_dtype_(key_dtype),
        value_dtype_(value_dtype),
        value_shape_(std::move(value_shape)),
        initialized_(kind != TableKind::kHash) {}

  const std::string& name() const { return name_; }
  TableKind kind() const { return kind_; }
  DType key_dtype() const { return key_dtype_; }
  DType value_dtype() const { return value_dtype_; }
  const TensorShape& value_shape() const { return value_shape_; }

  Status CheckKeys(const Tensor& keys) const {
    if (keys.dtype() != key_dtype_) {
      return errors::InvalidArgument("Lookup table '", name_, "': keys must be of type ",
                                     DTypeName(key_dtype_), " but got ", DTypeName(keys.dtype()));
    }
    return Status::OK();
  }

  // The keys and values as the (key, row) pairs a change applies; InvalidArgument when their
  // shapes or dtypes do not fit the table.
  Status Pairs(const Tensor& keys, const Tensor& values,
               std::vector<std::pair<std::string, Tensor>>* out) const {
    FS_RETURN_IF_ERROR(CheckKeys(keys));
    if (values.dtype() != value_dtype_) {
      return errors::InvalidArgument("Lookup table '", name_, "': values must be of type ",
                                     DTypeName(value_dtype_), " but got ",
                                     DTypeName(values.dtype()));
    }
    const TensorShape expected = Concat(keys.shape(), value_shape_);
    if (values.shape() != expected) {
      return errors::InvalidArgument("Expected shape ", expected.ToString(), " for value, got ",
                                     values.shape().ToString(), " (lookup table '", name_,
                                     "': the keys' shape ", keys.shape().ToString(),
                                     " then the value shape ", value_shape_.ToString(), ")");
    }
    out->clear();
    out->reserve(keys.num_elements());
    for (int64_t i = 0; i < keys.num_elements(); ++i) {
      out->emplace_back(EncodeKey(keys, i), RowOf(values, i, value_shape_));
    }
    return Status::OK();
  }

  Status Find(const Tensor& keys, const Tensor& default_value, Tensor* out) {
    FS_RETURN_IF_ERROR(CheckKeys(keys));
    FS_RETURN_IF_ERROR(CheckNotReserved(keys));
    if (default_value.dtype() != value_dtype_) {
      return errors::InvalidArgument("Lookup table '", name_, "': default_value must be of type ",
                                     DTypeName(value_dtype_), " but got ",
                                     DTypeName(default_value.dtype()));
    }
    const TensorShape out_shape = Concat(keys.shape(), value_shape_);
    const int64_t row = value_shape_.num_elements();
    // One default for every key, or one per key (an output-shaped default).
    const bool per_key = default_value.shape() == out_shape && default_value.num_elements() != row;
    if (!per_key && default_value.num_elements() != row) {
      return errors::InvalidArgument("Lookup table '", name_, "': default_value must have shape ",
                                     value_shape_.ToString(), " (the value shape) or ",
                                     out_shape.ToString(), " (one per key), got ",
                                     default_value.shape().ToString());
    }
    *out = Tensor::Host(value_dtype_, out_shape);
    const size_t width = DTypeSize(value_dtype_);
    std::lock_guard<std::mutex> lock(mu_);
    FS_RETURN_IF_ERROR(CheckInitialized());
    for (int64_t i = 0; i < keys.num_elements(); ++i) {
      auto it = entries_.find(EncodeKey(keys, i));
      char* dst = static_cast<char*>(out->raw_data()) + i * row * width;
      if (it != entries_.end()) {
        CopyElements(value_dtype_, it->second.raw_data(), dst, row);
      } else {
        const char* src =
            static_cast<const char*>(default_value.raw_data()) + (per_key ? i * row * width : 0);
        CopyElements(value_dtype_, src, dst, row);
      }
    }
    return Status::OK();
  }

  Status Insert(const Tensor& keys, const Tensor& values) {
    FS_RETURN_IF_ERROR(CheckMutable("Insert"));
    std::vector<std::pair<std::string, Tensor>> pairs;
    FS_RETURN_IF_ERROR(Pairs(keys, values, &pairs));
    FS_RETURN_IF_ERROR(CheckNotReserved(keys));
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, value] : pairs) entries_[key] = std::move(value);
    return Status::OK();
  }

  Status Remove(const Tensor& keys) {
    FS_RETURN_IF_ERROR(CheckMutable("Remove"));
    FS_RETURN_IF_ERROR(CheckKeys(keys));
    FS_RETURN_IF_ERROR(CheckNotReserved(keys));
    std::lock_guard<std::mutex> lock(mu_);
    for (int64_t i = 0; i < keys.num_elements(); ++i) entries_.erase(EncodeKey(keys, i));
    return Status::OK();
  }

  // Fills a HashTable once. Running the initializer again with the same data is a no-op (a
  // second tables_initializer run); with other data it is FailedPrecondition.
  Status Initialize(const std::vector<std::pair<std::string, Tensor>>& pairs) {
    if (kind_ != TableKind::kHash) {
      return errors::InvalidArgument("Lookup table '", name_,
                                     "' is mutable, not an "
                                     "initializable table: insert into it instead");
    }
    Entries fresh;
    fresh.reserve(pairs.size());
    for (const auto& [key, value] : pairs) {
      auto [it, added] = fresh.emplace(key, value);
      if (!added && !SameValue(it->second, value)) {
        return errors::FailedPrecondition(
            "HashTable has different value for same key. Key ", KeyString(key_dtype_, key), " has ",
            it->second.SummarizeValue(3), " and trying to add value ", value.SummarizeValue(3));
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (initialized_) {
      if (!SameEntries(fresh)) {
        return errors::FailedPrecondition("Table '", name_,
                                          "' was already initialized with different data.");
      }
      return Status::OK();
    }
    entries_ = std::move(fresh);
    initialized_ = true;
    return Status::OK();
  }

  // Replaces the contents (a restore); a HashTable is initialized by it. A dense table skips
  // entries under its empty and deleted keys: TensorFlow's dense tables export their whole
  // bucket array, free buckets marked by those keys.
  Status Import(const Tensor& keys, const Tensor& values) {
    std::vector<std::pair<std::string, Tensor>> pairs;
    FS_RETURN_IF_ERROR(Pairs(keys, values, &pairs));
    if (kind_ == TableKind::kHash) return Initialize(pairs);
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
    for (auto& [key, value] : pairs) {
      if (has_reserved_ && (key == empty_key_ || key == deleted_key_)) continue;
      entries_[key] = std::move(value);
    }
    return Status::OK();
  }

  Status Size(int64_t* size) {
    std::lock_guard<std::mutex> lock(mu_);
    *size = initialized_ ? static_cast<int64_t>(entries_.size()) : 0;
    return Status::OK();
  }

  // The keys (sorted) and their values.
  Status Export(Tensor* keys, Tensor* values) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<const Entries::value_type*> order;
    order.reserve(entries_.size());
    for (const auto& entry : entries_) order.push_back(&entry);
    const DType kd = key_dtype_;
    std::sort(order.begin(), order.end(),
              [kd](auto* a, auto* b) { return KeyLess(kd, a->first, b->first); });
    const int64_t n = static_cast<int64_t>(order.size());
    *keys = Tensor::Host(key_dtype_, TensorShape{n});
    *values = Tensor::Host(value_dtype_, Concat(TensorShape{n}, value_shape_));
    for (int64_t i = 0; i < n; ++i) {
      DecodeKey(order[i]->first, keys, i);
      CopyRowInto(order[i]->second, values, i);
    }
    return Status::OK();
  }

  void SetReservedKeys(std::string empty_key, std::string deleted_key) {
    empty_key_ = std::move(empty_key);
    deleted_key_ = std::move(deleted_key);
    has_reserved_ = true;
  }

 private:
  Status CheckInitialized() const {
    if (!initialized_) return errors::FailedPrecondition("Table not initialized.");
    return Status::OK();
  }

  Status CheckMutable(const char* verb) const {
    if (kind_ == TableKind::kHash) {
      return errors::Unimplemented(verb,
                                   " not supported by InitializableLookupTable "
                                   "implementations (the HashTable '",
                                   name_,
                                   "' is filled once by its initializer; use a "
                                   "MutableHashTable to change entries)");
    }
    return Status::OK();
  }

  Status CheckNotReserved(const Tensor& keys) const {
    if (!has_reserved_) return Status::OK();
    for (int64_t i = 0; i < keys.num_elements(); ++i) {
      const std::string key = EncodeKey(keys, i);
      if (key == empty_key_ || key == deleted_key_) {
        return errors::InvalidArgument(
            "Using the ", key == empty_key_ ? "empty_key" : "deleted_key",
            " as a table key is not allowed (key ", KeyString(key_dtype_, key),
            " in DenseHashTable '", name_, "')");
      }
    }
    return Status::OK();
  }

  bool SameEntries(const Entries& other) const {
    if (other.size() != entries_.size()) return false;
    for (const auto& [key, value] : other) {
      auto it = entries_.find(key);
      if (it == entries_.end() || !SameValue(it->second, value)) return false;
    }
    return true;
  }

  const std::string name_;
  const TableKind kind_;
  const DType key_dtype_;
  const DType value_dtype_;
  const TensorShape value_shape_;
  std::string empty_key_, deleted_key_;
  bool has_reserved_ = false;
  std::mutex mu_;
  bool initialized_;
  Entries entries_;
};

// The slot's value: a scalar variant holding the table (shared, never copied).
class TableHolder final : public VariantValue {
 public:
  explicit TableHolder(std::shared_ptr<LookupTable> table) : table_(std::move(table)) {}
  std::string TypeName() const override { return "tensorflow::lookup::LookupInterface"; }
  std::string DebugString() const override { return "<LookupTable " + table_->name() + ">"; }
  std::unique_ptr<VariantValue> Clone() const override {
    return std::make_unique<TableHolder>(table_);
  }
  const std::shared_ptr<LookupTable>& table() const { return table_; }

 private:
  std::shared_ptr<LookupTable> table_;
};

Status GetTable(KernelContext& ctx, std::shared_ptr<LookupTable>* out) {
  Var* slot = VarFromHandle(ctx.input(0));
  std::lock_guard<std::mutex> lock(slot->mu());
  const TableHolder* holder = HeldInSlot<TableHolder>(slot);
  if (holder == nullptr) {
    return errors::FailedPrecondition(ctx.node().type(), " '", ctx.node().name(),
                                      "': the resource '", slot->name(), "' is not a lookup table");
  }
  *out = holder->table();
  return Status::OK();
}

// --- the table-making ops -----------------------------------------------------------------

class TableOpKernel final : public OpKernel {
 public:
  TableOpKernel(const Node& node, TableKind kind) : OpKernel(node), kind_(kind) {}

  Status Compute(KernelContext& ctx) override {
    const AttrMap& attrs = node().attrs();
    std::string name = attrs.GetOr<std::string>("shared_name", "");
    if (name.empty()) name = node().name();
    DType key_dtype, value_dtype;
    FS_RETURN_IF_ERROR(attrs.Get("key_dtype", &key_dtype));
    FS_RETURN_IF_ERROR(attrs.Get("value_dtype", &value_dtype));
    PartialShape value_shape = attrs.GetOr<PartialShape>("value_shape", PartialShape(Dims{}));
    if (!value_shape.IsFullyDefined()) {
      return errors::InvalidArgument(node().type(), " '", node().name(), "': value_shape ",
                                     value_shape.ToString(), " must be fully defined");
    }
    if (kind_ == TableKind::kDense) {
      FS_RETURN_IF_ERROR(CheckReservedKeys(ctx, key_dtype));
    }
    Var* slot =
        ctx.resources()->LookupOrCreateVar("table:" + name, DType::kVariant, PartialShape(Dims{}));
    {
      std::lock_guard<std::mutex> lock(slot->mu());
      if (!slot->initialized()) {
        auto table = std::make_shared<LookupTable>(name, kind_, key_dtype, value_dtype,
                                                   value_shape.ToTensorShape());
        if (kind_ == TableKind::kDense) {
          table->SetReservedKeys(EncodeKey(ctx.input(0), 0), EncodeKey(ctx.input(1), 0));
        }
        Tensor value = Tensor::Host(DType::kVariant, TensorShape{});
        value.data<Variant>()[0] = Variant(std::make_shared<TableHolder>(std::move(table)));
        slot->value() = std::move(value);
      } else {
        const TableHolder* holder = HeldInSlot<TableHolder>(slot);
        if (holder == nullptr || holder->table()->key_dtype() != key_dtype ||
            holder->table()->value_dtype() != value_dtype) {
          return errors::InvalidArgument(node().type(), " '", node().name(), "': shared_name '",
                                         name, "' names a resource that is not a lookup table of ",
                                         DTypeName(key_dtype), " -> ", DTypeName(value_dtype));
        }
      }
    }
    Tensor* out;
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(0, TensorShape{}, &out));
    std::memcpy(out->raw_data(), &slot, sizeof(slot));
    return Status::OK();
  }

 private:
  Status CheckReservedKeys(KernelContext& ctx, DType key_dtype) const {
    const Tensor& empty = ctx.input(0);
    const Tensor& deleted = ctx.input(1);
    if (empty.num_elements() != 1 || deleted.num_elements() != 1) {
      return errors::InvalidArgument(node().type(), " '", node().name(),
                                     "': empty_key and deleted_key must be scalars, got shapes ",
                                     empty.shape().ToString(), " and ", deleted.shape().ToString());
    }
    if (empty.dtype() != key_dtype || deleted.dtype() != key_dtype) {
      return errors::InvalidArgument(node().type(), " '", node().name(),
                                     "': empty_key and deleted_key must be of the key dtype ",
                                     DTypeName(key_dtype));
    }
    if (EncodeKey(empty, 0) == EncodeKey(deleted, 0)) {
      return errors::InvalidArgument(node().type(), " '", node().name(),
                                     "': Empty and deleted keys cannot be equal");
    }
    return Status::OK();
  }

  TableKind kind_;
};

struct TableRow {
  const char* name;
  TableKind kind;
  const char* doc;
};

const TableRow kTables[] = {
    {"HashTableV2", TableKind::kHash,
     "A hash table filled once by InitializeTableV2 (or from a text file); lookups before that "
     "fail with 'Table not initialized.'"},
    {"MutableHashTableV2", TableKind::kMutable,
     "A hash table from scalar keys to scalar values that LookupTableInsertV2 and "
     "LookupTableRemoveV2 change."},
    {"MutableHashTableOfTensorsV2", TableKind::kMutableOfTensors,
     "A mutable hash table from scalar keys to values of shape value_shape."},
    {"MutableDenseHashTableV2", TableKind::kDense,
     "A mutable hash table whose empty_key and deleted_key may never be used as keys."},
};

Status HandleShape(InferenceContext& ctx) {
  DType key_dtype;
  FS_RETURN_IF_ERROR(ctx.GetAttr("key_dtype", &key_dtype));
  if (!IsKeyType(key_dtype)) {
    return errors::InvalidArgument(ctx.op_type(), " '", ctx.node_name(),
                                   "': tables take int32, int64 or string keys, not ",
                                   DTypeName(key_dtype));
  }
  return shape_fns::Scalar(ctx);
}

const std::vector<DType> kValueTypes = {DType::kInt32,   DType::kInt64,  DType::kFloat32,
                                        DType::kFloat64, DType::kString, DType::kBool};

const bool kTablesRegistered = [] {
  for (const TableRow& row : kTables) {
    OpBuilder b(row.name);
    if (row.kind == TableKind::kDense) {
      b.Input("empty_key", "key_dtype").Input("deleted_key", "key_dtype");
    }
    b.Output("table_handle", "resource")
        .Attr("container", "")
        .Attr("shared_name", "")
        .Attr("use_node_name_sharing", false)
        .TypeAttr("key_dtype")
        .TypeAttr("value_dtype", kValueTypes);
    if (row.kind == TableKind::kMutableOfTensors || row.kind == TableKind::kDense) {
      b.Attr("value_shape", AttrValue(PartialShape(Dims{})));
    }
    if (row.kind == TableKind::kDense) {
      b.Attr("initial_num_buckets", 131072).Attr("max_load_factor", 0.8f);
    }
    const TableKind kind = row.kind;
    b.Stateful()
        .Shape(HandleShape)
        .KernelFactory("CPU",
                       [kind](const Node& node, std::unique_ptr<OpKernel>* out) {
                         *out = std::make_unique<TableOpKernel>(node, kind);
                         return Status::OK();
                       })
        .NotDifferentiable()
        .Doc(row.doc);
    OpRegistrar registrar(b);
  }
  return true;
}();

// --- find, insert, remove, size, export, import ---------------------------------------------

Status FindKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  Tensor out;
  FS_RETURN_IF_ERROR(table->Find(ctx.input(1), ctx.input(2), &out));
  ctx.SetOutput(0, std::move(out));
  return Status::OK();
}

// The keys' shape for scalar values (a scalar default). A non-scalar default is either the value
// shape or one per key, which the shapes alone cannot tell apart: unknown.
Status FindShape(InferenceContext& ctx) {
  const PartialShape& keys = ctx.input(1);
  const PartialShape& value = ctx.input(2);
  if (!keys.known_rank() || !value.known_rank()) {
    ctx.set_output(0, PartialShape::Unknown());
    return Status::OK();
  }
  if (value.rank() == 0) {
    ctx.set_output(0, keys);
    return Status::OK();
  }
  ctx.set_output(0, PartialShape::Unknown());
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("LookupTableFindV2")
                   .Input("table_handle", "resource")
                   .Input("keys", "Tin")
                   .Input("default_value", "Tout")
                   .Output("values", "Tout")
                   .TypeAttr("Tin")
                   .TypeAttr("Tout")
                   .Stateful()
                   .Shape(FindShape)
                   .Kernel("CPU", FindKernel)
                   .NotDifferentiable()
                   .Doc("The values of `keys` in a table, `default_value` for keys it lacks."));

Status InsertKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  return table->Insert(ctx.input(1), ctx.input(2));
}

// LookupTableInsertV2 and LookupTableImportV2: keys and values written into a table.
OpBuilder KeysAndValuesOp(const char* name, KernelFn kernel) {
  OpBuilder b(name);
  b.Input("table_handle", "resource")
      .Input("keys", "Tin")
      .Input("values", "Tout")
      .TypeAttr("Tin")
      .TypeAttr("Tout")
      .Stateful()
      .Shape(shape_fns::NoOutputs)
      .Kernel("CPU", std::move(kernel))
      .NotDifferentiable();
  return b;
}

FS_REGISTER_OP(KeysAndValuesOp("LookupTableInsertV2", InsertKernel)
                   .Doc("Sets the values of `keys` in a mutable table."));

Status RemoveKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  return table->Remove(ctx.input(1));
}

FS_REGISTER_OP(OpBuilder("LookupTableRemoveV2")
                   .Input("table_handle", "resource")
                   .Input("keys", "Tin")
                   .TypeAttr("Tin")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", RemoveKernel)
                   .NotDifferentiable()
                   .Doc("Removes `keys` from a mutable table (keys it lacks are ignored)."));

Status SizeKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  int64_t size;
  FS_RETURN_IF_ERROR(table->Size(&size));
  ctx.SetOutput(0, Tensor::Scalar<int64_t>(size));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("LookupTableSizeV2")
                   .Input("table_handle", "resource")
                   .Output("size", "int64")
                   .Stateful()
                   .Shape(shape_fns::Scalar)
                   .Kernel("CPU", SizeKernel)
                   .NotDifferentiable()
                   .Doc("The number of entries in a table."));

Status ExportKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  DType tkeys, tvalues;
  FS_RETURN_IF_ERROR(ctx.attrs().Get("Tkeys", &tkeys));
  FS_RETURN_IF_ERROR(ctx.attrs().Get("Tvalues", &tvalues));
  if (tkeys != table->key_dtype() || tvalues != table->value_dtype()) {
    return errors::InvalidArgument("LookupTableExportV2 '", ctx.node().name(), "' exports ",
                                   DTypeName(tkeys), " -> ", DTypeName(tvalues), " but the table '",
                                   table->name(), "' maps ", DTypeName(table->key_dtype()), " -> ",
                                   DTypeName(table->value_dtype()));
  }
  Tensor keys, values;
  FS_RETURN_IF_ERROR(table->Export(&keys, &values));
  ctx.SetOutput(0, std::move(keys));
  ctx.SetOutput(1, std::move(values));
  return Status::OK();
}

Status ExportShape(InferenceContext& ctx) {
  ctx.set_output(0, PartialShape::UnknownOfRank(1));
  ctx.set_output(1, PartialShape::Unknown());
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("LookupTableExportV2")
                   .Input("table_handle", "resource")
                   .Output("keys", "Tkeys")
                   .Output("values", "Tvalues")
                   .TypeAttr("Tkeys")
                   .TypeAttr("Tvalues")
                   .Stateful()
                   .Shape(ExportShape)
                   .Kernel("CPU", ExportKernel)
                   .NotDifferentiable()
                   .Doc("All keys of a table (sorted) and their values."));

Status ImportKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  return table->Import(ctx.input(1), ctx.input(2));
}

FS_REGISTER_OP(KeysAndValuesOp("LookupTableImportV2", ImportKernel)
                   .Doc("Replaces a table's contents with `keys` and `values` (a restore)."));

Status InitializeKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  std::vector<std::pair<std::string, Tensor>> pairs;
  const Tensor& keys = ctx.input(1);
  const Tensor& values = ctx.input(2);
  if (keys.shape() != values.shape()) {
    return errors::InvalidArgument("InitializeTableV2 '", ctx.node().name(),
                                   "': keys and values must have the same shape, got ",
                                   keys.shape().ToString(), " and ", values.shape().ToString());
  }
  FS_RETURN_IF_ERROR(table->Pairs(keys, values, &pairs));
  return table->Initialize(pairs);
}

FS_REGISTER_OP(OpBuilder("InitializeTableV2")
                   .Input("table_handle", "resource")
                   .Input("keys", "Tkey")
                   .Input("values", "Tval")
                   .TypeAttr("Tkey")
                   .TypeAttr("Tval")
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", InitializeKernel)
                   .NotDifferentiable()
                   .Doc("Fills a HashTable with `keys` -> `values`."));

// --- InitializeTableFromTextFileV2 ----------------------------------------------------------

constexpr int64_t kWholeLine = -2;
constexpr int64_t kLineNumber = -1;

// Splits on any of the delimiter's characters, as TensorFlow's text file tables do.
std::vector<std::string> SplitLine(const std::string& line, const std::string& delimiter) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i == line.size() || delimiter.find(line[i]) != std::string::npos) {
      out.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// Writes column `index` of a line (or the whole line, or its number) as element `i` of `out`.
Status ParseField(const std::string& filename, int64_t line_number, const std::string& line,
                  const std::vector<std::string>& tokens, int64_t index, Tensor* out, int64_t i) {
  const DType dtype = out->dtype();
  if (index == kLineNumber) {
    out->data<int64_t>()[i] = line_number;
    return Status::OK();
  }
  const std::string& text = index == kWholeLine ? line : tokens[index];
  auto bad = [&](const char* what) {
    return errors::InvalidArgument("Field ", text, " in line ", line_number, " is not a valid ",
                                   what, ". (", filename, ")");
  };
  switch (dtype) {
    case DType::kString:
      out->data<std::string>()[i] = text;
      return Status::OK();
    case DType::kInt32:
    case DType::kInt64: {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
        return bad(DTypeName(dtype));
      }
      if (dtype == DType::kInt32) {
        if (v < INT32_MIN || v > INT32_MAX) return bad("int32");
        out->data<int32_t>()[i] = static_cast<int32_t>(v);
      } else {
        out->data<int64_t>()[i] = v;
      }
      return Status::OK();
    }
    case DType::kFloat32:
    case DType::kFloat64: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) return bad(DTypeName(dtype));
      if (dtype == DType::kFloat32) {
        out->data<float>()[i] = static_cast<float>(v);
      } else {
        out->data<double>()[i] = v;
      }
      return Status::OK();
    }
    default:
      return errors::InvalidArgument("Text file tables cannot hold ", DTypeName(dtype), " values");
  }
}

Status CheckIndex(const char* which, int64_t index, DType dtype, const Node& node) {
  if (index < kWholeLine) {
    return errors::InvalidArgument("InitializeTableFromTextFileV2 '", node.name(), "': ", which,
                                   "_index must be >= -2 (-2 the whole line, -1 the line "
                                   "number), got ",
                                   index);
  }
  if (index == kLineNumber && dtype != DType::kInt64) {
    return errors::InvalidArgument("InitializeTableFromTextFileV2 '", node.name(), "': the ", which,
                                   " is the line number, which needs dtype int64, but "
                                   "the table has ",
                                   DTypeName(dtype));
  }
  if (index == kWholeLine && dtype != DType::kString) {
    return errors::InvalidArgument("InitializeTableFromTextFileV2 '", node.name(), "': the ", which,
                                   " is the whole line, which needs dtype string, but "
                                   "the table has ",
                                   DTypeName(dtype));
  }
  return Status::OK();
}

Status InitializeFromTextFileKernel(KernelContext& ctx) {
  std::shared_ptr<LookupTable> table;
  FS_RETURN_IF_ERROR(GetTable(ctx, &table));
  const Tensor& filename_tensor = ctx.input(1);
  if (filename_tensor.dtype() != DType::kString || filename_tensor.num_elements() != 1) {
    return errors::InvalidArgument("InitializeTableFromTextFileV2 '", ctx.node().name(),
                                   "': filename must be a string scalar, got shape ",
                                   filename_tensor.shape().ToString());
  }
  const std::string filename = filename_tensor.data<std::string>()[0];
  const AttrMap& attrs = ctx.attrs();
  const int64_t key_index = attrs.GetOr<int64_t>("key_index", 0);
  const int64_t value_index = attrs.GetOr<int64_t>("value_index", 0);
  const int64_t vocab_size = attrs.GetOr<int64_t>("vocab_size", -1);
  const int64_t offset = attrs.GetOr<int64_t>("offset", 0);
  const std::string delimiter = attrs.GetOr<std::string>("delimiter", "\t");
  FS_RETURN_IF_ERROR(CheckIndex("key", key_index, table->key_dtype(), ctx.node()));
  FS_RETURN_IF_ERROR(CheckIndex("value", value_index, table->value_dtype(), ctx.node()));
  if (table->value_shape().rank() != 0) {
    return errors::InvalidArgument("InitializeTableFromTextFileV2 '", ctx.node().name(),
                                   "': the table's values must be scalars");
  }

  std::ifstream file(filename, std::ios::binary);
  if (!file) return errors::NotFound(filename, "; No such file or directory");
  std::vector<std::string> lines;
  std::string line;
  int64_t position = 0;  // the byte offset after the line read, as TensorFlow reports it
  while ((vocab_size < 0 || static_cast<int64_t>(lines.size()) < vocab_size) &&
         std::getline(file, line)) {
    position += static_cast<int64_t>(line.size()) + (file.eof() ? 0 : 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      return errors::InvalidArgument("Invalid content in ", filename,
                                     ": empty line found at position ", position, ".");
    }
    lines.push_back(std::move(line));
  }
  if (file.bad()) return errors::DataLoss("Reading ", filename, " failed");
  const int64_t n = static_cast<int64_t>(lines.size());
  if (vocab_size >= 0 && n < vocab_size) {
    return errors::InvalidArgument("Invalid vocab_size in ", filename, ": expected ", vocab_size,
                                   " but got ", n);
  }
  Tensor keys = Tensor::Host(table->key_dtype(), TensorShape{n});
  Tensor values = Tensor::Host(table->value_dtype(), TensorShape{n});
  const int64_t needed = std::max(key_index, value_index) + 1;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<std::string> tokens;
    if (needed > 0) {
      tokens = SplitLine(lines[i], delimiter);
      if (static_cast<int64_t>(tokens.size()) < needed) {
        return errors::InvalidArgument("Invalid number of columns in ", filename, " line ", i, " (",
                                       lines[i], ") : expected at least ", needed, " got ",
                                       tokens.size());
      }
    }
    FS_RETURN_IF_ERROR(ParseField(filename, i + offset, lines[i], tokens, key_index, &keys, i));
    FS_RETURN_IF_ERROR(ParseField(filename, i + offset, lines[i], tokens, value_index, &values, i));
  }
  std::vector<std::pair<std::string, Tensor>> pairs;
  FS_RETURN_IF_ERROR(table->Pairs(keys, values, &pairs));
  return table->Initialize(pairs);
}

FS_REGISTER_OP(OpBuilder("InitializeTableFromTextFileV2")
                   .Input("table_handle", "resource")
                   .Input("filename", "string")
                   .RequiredAttr("key_index", AttrType::kInt)
                   .RequiredAttr("value_index", AttrType::kInt)
                   .Attr("vocab_size", -1)
                   .Attr("delimiter", "\t")
                   .Attr("offset", 0)
                   .Stateful()
                   .Shape(shape_fns::NoOutputs)
                   .Kernel("CPU", InitializeFromTextFileKernel)
                   .NotDifferentiable()
                   .Doc("Fills a HashTable from a text file, one entry a line: the key and value "
                        "are columns (split on any delimiter character), the whole line (-2) or "
                        "the line number (-1)."));

}  // namespace
}  // namespace flowstone
