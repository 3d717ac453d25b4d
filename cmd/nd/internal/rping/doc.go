// Package rping holds nd rping: rdma-core's rping (librdmacm/examples/rping.c)
// over any provider, wire-compatible with it over Linux soft-iWARP.
package rping
