// Package docscheck checks that the repository's README and docs/*.md
// agree with its tree: the provider table with provider/*, the nd command
// table with cmd/nd's commands, the layout with the package directories,
// and every conformance case the text names with ndtest's subtests. Its
// test runs the checks on the repository; the functions take the tree as
// an fs.FS so that the test also runs them on broken copies.
package docscheck
