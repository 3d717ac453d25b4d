// Package session is one test's connection, as nd's tools set it up: the
// provider and adapter they open (OpenProvider, OpenAdapter), listening and
// connecting (Session), the flags and hello the data tests share (DataFlags,
// Hello), and the server in a child process (StartServerChild). The data
// path's rings and registrations are in package datapath, clocks and the
// size sweep in timing, flag types and usage errors in cli.
//
// Its functions are called from one command's goroutines; a value is not
// safe for concurrent use unless its doc comment says so.
package session
