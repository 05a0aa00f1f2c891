// The transports the controller can run on: the built-in single-process one, and Open MPI's,
// loaded from the libflowstone_mpi.so plugin.
#pragma once

#include <memory>
#include <string>

#include "flowstone/collectives.h"

namespace flowstone::collectives {

// Whether an MPI launcher started this process (mpirun and flowstone-run set
// OMPI_COMM_WORLD_SIZE; other MPI launchers set PMI_SIZE or PMIX_RANK).
bool LaunchedByMpi();

// Size 1: every collective copies its input.
std::unique_ptr<CollectiveTransport> MakeLocalTransport();

// dlopens the MPI plugin (`path`, or libflowstone_mpi.so beside libflowstone.so) and starts MPI.
// NotFound names the library that is missing and how to install it.
Status LoadMpiTransport(const std::string& path, std::unique_ptr<CollectiveTransport>* out);

}  // namespace flowstone::collectives
