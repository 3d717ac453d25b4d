// Package perftest holds nd perf: perftest's send, write and read _bw and
// _lat tests over any provider, with perftest's flags and columns, --json
// and --plot.
//
// perf.go holds the command line; client.go, client_step.go, server.go,
// server_step.go, run.go and cq.go the two sides of nd's own protocol,
// wire.go what they say to each other, report.go, stats.go and plot.go the
// output, child.go the server in a child process. With -R, nd perf speaks
// perftest 6.06's rdma_cm protocol instead (rcm.go): its wire structures
// (rcm_wire.go), the control channel (rcm_ctrl.go), the data driver
// (rcm_conn.go, rcm_bw.go, rcm_lat.go, rcm_clock.go) and the printing
// (rcm_report.go).
package perftest
