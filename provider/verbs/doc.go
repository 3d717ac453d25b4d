// Package verbs is godirect's rdma-core backend: ND v1 on top of libibverbs
// and librdmacm, so that an nd program runs over any RDMA device the kernel
// drives (iWARP such as siw, RoCE such as rxe, InfiniBand).
//
// The provider needs cgo and the build tag verbs on Linux:
//
//	apt-get install libibverbs-dev librdmacm-dev
//	go build -tags verbs ./...
//
// Without the tag the package still registers a provider named "verbs", whose
// Addresses and OpenAdapter report nd.ErrNotSupported and say how to build
// the real one, so the default build stays pure Go.
//
// # Mapping
//
// An adapter is one RDMA device port with an IPv4 address (ND addresses are
// IP addresses; rdma_cm picks the device from the address). A completion
// queue is an ibv_cq with its completion channel, whose file descriptor waits
// in the Go runtime's poller; an endpoint is an RC queue pair that the
// provider creates itself and connects through rdma_cm; connectors and
// listeners are rdma_cm ids; a memory region is an ibv_mr. Memory windows are
// emulated (see docs/verbs.md): Bind registers the window's bytes as a
// separate ibv_mr with the window's rights, whose rkey is the ND token.
// docs/verbs.md has the complete mapping, the ibv_wc_status table and the
// deviations each device forces.
package verbs
