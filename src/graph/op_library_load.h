// Between the op registry and the library loader: while a custom op library loads on a thread,
// what would abort the process at start-up (an op registered twice, one without a shape function)
// is collected here and returned as an error instead.
#pragma once

#include <string>
#include <vector>

namespace flowstone::internal {

struct LibraryLoad {
  std::vector<std::string> already_registered;  // op names that were taken
  std::vector<std::string> without_shape_fn;    // op names declared without a shape function
  std::vector<std::string> registered;          // op names added
};

// The load in progress on this thread, or nullptr (static initialization of the core itself).
LibraryLoad*& CurrentLibraryLoad();

}  // namespace flowstone::internal
