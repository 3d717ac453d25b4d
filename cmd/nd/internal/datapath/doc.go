// Package datapath is nd's tools' side of the data path: rings of requests
// and of posted Receives over one completion queue (RequestRing,
// ReceiveRing, Reaper), pacing of Sends by the peer's credits (Pacer),
// registrations and memory windows (Registered, WindowAlloc, WindowMsg),
// and the last-byte polls that see a Write land (LoadByte, Stamps).
//
// A value is used by one goroutine at a time unless its doc comment says
// otherwise.
package datapath
