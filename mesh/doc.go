// Package mesh connects every rank of a job to every other over ND: each
// rank publishes its business card (where it listens, and which host it is
// on) in the job's key-value space, gathers every peer's, and connects,
// choosing shared memory (provider/shm) between ranks on one host and TCP
// (provider/tcp, or any provider given, such as verbs) between hosts.
//
// The job is usually the one a launcher started the process in (package
// pmi: mpiexec, srun), whose *pmi.Client is a Job; InProcess makes the
// ranks of a job of goroutines, for tests.
//
//	cl, _ := pmi.Init(ctx, nil)
//	m, _ := mesh.Build(ctx, cl, nil)
//	defer m.Close()
//	for _, p := range m.Peers { ... p.Endpoint.Send(...) ... }
//
// Every endpoint of a provider is on one completion queue: a rank polls
// at most two queues (Mesh.Queues), however many peers it has.
//
// A business card is the value of key "godirect-card-RANK":
//
//	HOST|shm:127.0.0.1:PORT|tcp:ADDR:PORT
//
// HOST names the host as shared memory sees it (on Linux the boot id and
// the network namespace, whose abstract Unix sockets provider/shm's
// listeners are; elsewhere the host name). Rank i connects to every rank
// below it and accepts every rank above it; the connection request's
// private data names the connecting rank and a hash of the job id, so
// that a stray request is refused.
package mesh
