# shellcheck shell=sh
# ompi_exit_race FILE: 0 if FILE (a job's output) holds Open MPI 4.x's report of a
# rank that "exiting improperly" with "PID 0": a race of its runtime at the end of a
# job whose ranks all called MPI_Finalize and exited 0 (open-mpi/ompi#7833, #9389,
# #12607; seen here about once in 40 jobs on a loaded 2-core machine, with every rank's
# own exit status 0). The callers (tests/mpirun-wrapper, tests/lib.sh's run and
# tests/test_docs_commands.sh) run such a job once more, saying so; any other failure
# stands.
ompi_exit_race() {
    grep -q 'with PID 0 on' "$1" 2>/dev/null && grep -q 'exiting improperly' "$1" 2>/dev/null
}
