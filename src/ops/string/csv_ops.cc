// DecodeCSV (tf.io.decode_csv): each record split into fields on field_delim, with RFC 4180
// quotes ("a, b" is one field; "" inside quotes is a quote), and each field parsed as its column's
// type, empty fields (or na_value) taking the column's default.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "flowstone/kernel.h"
#include "flowstone/op_registry.h"
#include "flowstone/shape_inference.h"

namespace flowstone {
namespace {

const std::vector<DType> kCsvTypes = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                      DType::kInt64, DType::kString};

Status SplitRecord(const std::string& record, char delim, bool quotes, int64_t index,
                   std::vector<std::string>* fields) {
  fields->clear();
  std::string field;
  size_t i = 0;
  while (true) {
    field.clear();
    if (quotes && i < record.size() && record[i] == '"') {
      ++i;
      while (true) {
        if (i >= record.size()) {
          return errors::InvalidArgument(
              "Quoted field has to end with quote followed by delim "
              "or end of record ",
              index, ": ", record);
        }
        if (record[i] == '"') {
          if (i + 1 < record.size() && record[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += record[i++];
      }
      if (i < record.size() && record[i] != delim) {
        return errors::InvalidArgument(
            "Quote inside a string has to be escaped by another "
            "quote in record ",
            index, ": ", record);
      }
    } else {
      while (i < record.size() && record[i] != delim) {
        if (quotes && record[i] == '"') {
          return errors::InvalidArgument("Unquoted fields cannot have quotes inside in record ",
                                         index, ": ", record);
        }
        field += record[i++];
      }
    }
    fields->push_back(field);
    if (i >= record.size()) return Status::OK();
    ++i;  // the delimiter
  }
}

template <typename T>
bool ParseField(const std::string& s, T* out) {
  errno = 0;
  char* end = nullptr;
  if constexpr (std::is_floating_point_v<T>) {
    *out = static_cast<T>(std::strtod(s.c_str(), &end));
  } else {
    const long long v = std::strtoll(s.c_str(), &end, 10);
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
    *out = static_cast<T>(v);
  }
  return errno == 0 && end != nullptr && end != s.c_str() && *end == '\0';
}

const char* TypeWord(DType t) {
  switch (t) {
    case DType::kFloat32:
      return "float";
    case DType::kFloat64:
      return "double";
    case DType::kInt32:
      return "int32";
    default:
      return "int64";
  }
}

Status DecodeCsvKernel(KernelContext& ctx) {
  const Tensor& records = ctx.input(0);
  const int num_columns = ctx.num_outputs();
  const std::string delim = ctx.attrs().GetOr<std::string>("field_delim", ",");
  if (delim.size() != 1) {
    return errors::InvalidArgument("field_delim should be only 1 char, got \"", delim, "\"");
  }
  const bool quotes = ctx.attrs().GetOr<bool>("use_quote_delim", true);
  const std::string na_value = ctx.attrs().GetOr<std::string>("na_value", "");
  const std::vector<int64_t> select_cols =
      ctx.attrs().GetOr<std::vector<int64_t>>("select_cols", {});
  if (!select_cols.empty() && static_cast<int>(select_cols.size()) != num_columns) {
    return errors::InvalidArgument("select_cols should match record_defaults. Got ",
                                   select_cols.size(), " select_cols and ", num_columns,
                                   " record_defaults");
  }
  for (size_t c = 1; c < select_cols.size(); ++c) {
    if (select_cols[c] <= select_cols[c - 1]) {
      return errors::InvalidArgument("select_cols is not strictly increasing.");
    }
  }
  for (int c = 0; c < num_columns; ++c) {
    const Tensor& def = ctx.input(1 + c);
    if (std::find(kCsvTypes.begin(), kCsvTypes.end(), def.dtype()) == kCsvTypes.end()) {
      return errors::InvalidArgument("record_defaults[", c, "] has dtype ", DTypeName(def.dtype()),
                                     "; CSV columns are float32, float64, int32, int64 or string");
    }
    if (def.num_elements() > 1 || def.rank() > 1) {
      return errors::InvalidArgument(
          "Shape of a default must be a length-0 or length-1 "
          "vector, or a scalar; record_defaults[",
          c, "] has shape ", def.shape().ToString());
    }
  }
  std::vector<Tensor*> outputs(num_columns);
  for (int c = 0; c < num_columns; ++c) {
    FS_RETURN_IF_ERROR(ctx.AllocateOutput(c, records.shape(), &outputs[c]));
  }
  std::vector<std::string> fields;
  for (int64_t r = 0; r < records.num_elements(); ++r) {
    FS_RETURN_IF_ERROR(SplitRecord(records.data<std::string>()[r], delim[0], quotes, r, &fields));
    if (select_cols.empty() && static_cast<int>(fields.size()) != num_columns) {
      return errors::InvalidArgument("Expect ", num_columns, " fields but have ", fields.size(),
                                     " in record ", r);
    }
    if (!select_cols.empty() && select_cols.back() >= static_cast<int64_t>(fields.size())) {
      return errors::InvalidArgument("Expect at least ", select_cols.back() + 1,
                                     " fields but have ", fields.size(), " in record ", r);
    }
    for (int c = 0; c < num_columns; ++c) {
      const int64_t column = select_cols.empty() ? c : select_cols[c];
      const std::string& field = fields[column];
      const Tensor& def = ctx.input(1 + c);
      Tensor* out = outputs[c];
      const bool missing = field.empty() || field == na_value;
      if (missing && def.num_elements() == 0) {
        return errors::InvalidArgument("Field ", c, " is required but missing in record ", r, "!");
      }
      if (out->dtype() == DType::kString) {
        out->data<std::string>()[r] = missing ? def.data<std::string>()[0] : field;
        continue;
      }
      Status parsed;
      auto parse = [&]<typename T>() {
        if (missing) {
          out->data<T>()[r] = def.data<T>()[0];
        } else if (!ParseField<T>(field, &out->data<T>()[r])) {
          parsed = errors::InvalidArgument("Field ", c, " in record ", r, " is not a valid ",
                                           TypeWord(out->dtype()), ": ", field);
        }
      };
      switch (out->dtype()) {
        case DType::kFloat32:
          parse.operator()<float>();
          break;
        case DType::kFloat64:
          parse.operator()<double>();
          break;
        case DType::kInt32:
          parse.operator()<int32_t>();
          break;
        default:
          parse.operator()<int64_t>();
      }
      FS_RETURN_IF_ERROR(parsed);
    }
  }
  return Status::OK();
}

Status DecodeCsvShape(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, ctx.input(0));
  return Status::OK();
}

FS_REGISTER_OP(OpBuilder("DecodeCSV")
                   .Input("records", "string")
                   .InputTypeList("record_defaults", "OUT_TYPE")
                   .OutputTypeList("output", "OUT_TYPE")
                   .Attr("field_delim", ",")
                   .Attr("use_quote_delim", true)
                   .Attr("na_value", "")
                   .Attr("select_cols", AttrValue(std::vector<int64_t>{}))
                   .Shape(DecodeCsvShape)
                   .Kernel("CPU", DecodeCsvKernel)
                   .NotDifferentiable()
                   .Doc("The fields of CSV records, one output per column, parsed as the type of "
                        "that column's default."));

}  // namespace
}  // namespace flowstone
