// Package peers holds the plain Go side of bench/peers.sh: the shape of
// ndtest.BenchmarkPeers (many connections between two ends in one process)
// written with net.Conn and a goroutine reading each connection, the way
// Go programs usually serve many peers.
package peers
