// Package pmi joins the job a launcher started this process in: MPICH's
// mpiexec (Hydra), Slurm's srun --mpi=pmi2, or any launcher that speaks
// the PMI-1 or PMI-2 wire protocol on the descriptor (PMI_FD) or TCP port
// (PMI_PORT) it names in the environment. It is pure Go, with no C
// library.
//
// Init reads the environment, connects and introduces the process; the
// Client then tells its rank, the job's size, job id, universe and appnum,
// and offers the job's key-value space: Put, then Fence (a barrier after
// which every rank sees every Put before it), then Get. Finalize ends the
// process's part in the job; Abort asks the launcher to end the whole job.
// With no launcher in the environment a process is a job of one.
//
// Every call that waits for the launcher takes a context, and a launcher
// that closes the connection, dies or answers garbage ends the call with
// an error (ErrLauncherGone, ErrProtocol) instead of a hang; Done closes
// the moment the connection ends, even between calls, so that a program
// can stop its own work when its launcher is gone.
//
// docs/pmi.md lists the commands spoken and the answers expected.
package pmi
