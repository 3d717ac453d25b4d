// Package ndtools holds the Network Direct SDK's own test tools as nd's
// subcommands: nd info (ndadapterinfo), nd ping (ndping), nd pingpong
// (ndpingpong), nd rdmaping (ndrping) and nd rdmapingpong (ndrpingpong).
// Each exports the function that defines its flags and returns the
// command's run function.
package ndtools
