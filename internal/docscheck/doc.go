// Package docscheck checks that the repository's README and docs/*.md
// agree with its tree: the provider table with provider/*, the nd command
// table with cmd/nd's commands, the layout with the package directories,
// every conformance case the text names with ndtest's subtests, and the
// row of docs/semantics.md every case's rule cites with that page. Its
// test runs the checks on the repository; the functions take the tree as
// an fs.FS so that the test also runs them on broken copies.
package docscheck
