package docscheck

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
)

// readFile returns the text of name in root.
func readFile(root fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(root, name)
	return string(b), err
}

// readmeTable returns the rows of the README's table whose header line is
// header (tableRows), with the file named in its error.
func readmeTable(root fs.FS, header string) ([][]string, error) {
	readme, err := readFile(root, "README.md")
	if err != nil {
		return nil, err
	}
	rows, err := tableRows(readme, header)
	if err != nil {
		return nil, fmt.Errorf("README.md: %w", err)
	}
	return rows, nil
}

// tableRows returns the cells of the rows of the Markdown table whose
// header line is header: every "|" line after the header and its rule,
// split by tableCells.
func tableRows(text, header string) ([][]string, error) {
	lines := strings.Split(text, "\n")
	i := slices.Index(lines, header)
	if i < 0 || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|---") {
		return nil, fmt.Errorf("no table with the header %q", header)
	}
	var rows [][]string
	for _, l := range lines[i+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows = append(rows, tableCells(l))
	}
	return rows, nil
}

// tableCells splits the Markdown table line l on "|" (an escaped "\|"
// stays in its cell, unescaped) and trims the cells.
func tableCells(l string) []string {
	l = strings.ReplaceAll(strings.Trim(l, "|"), `\|`, "\x00")
	var cells []string
	for _, c := range strings.Split(l, "|") {
		cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
	}
	return cells
}

// codeBlockAfter returns the lines of the first fenced code block after the
// line heading.
func codeBlockAfter(text, heading string) ([]string, error) {
	lines := strings.Split(text, "\n")
	i := slices.Index(lines, heading)
	if i < 0 {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	var block []string
	in := false
	for _, l := range lines[i+1:] {
		switch {
		case strings.HasPrefix(l, "```") && !in:
			in = true
		case strings.HasPrefix(l, "```"):
			return block, nil
		case in:
			block = append(block, l)
		}
	}
	return nil, fmt.Errorf("no closed code block after %q", heading)
}

// goDirs returns the directories of root that hold .go files, except those
// under a directory whose name starts with "." or "_" or is "testdata"
// (which the go command ignores).
func goDirs(root fs.FS) ([]string, error) {
	var dirs []string
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			if dir := path.Dir(p); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	return dirs, err
}

// isDir reports whether p is a directory of root.
func isDir(root fs.FS, p string) bool {
	st, err := fs.Stat(root, p)
	return err == nil && st.IsDir()
}

// Providers checks the README's provider table against provider/*: every
// provider it lists is a directory provider/NAME with Go files, every such
// directory is listed, and none that exists is called "planned".
func Providers(root fs.FS) []error {
	rows, err := readmeTable(root, "| provider | what it is | status |")
	if err != nil {
		return []error{err}
	}
	dirs, err := goDirs(root)
	if err != nil {
		return []error{err}
	}
	var errs []error
	listed := map[string]bool{}
	for _, row := range rows {
		name := strings.Trim(row[0], "`")
		listed[name] = true
		dir := "provider/" + name
		switch {
		case len(row) != 3:
			errs = append(errs, fmt.Errorf("README.md: the provider row %q does not have three cells", row))
		case !slices.Contains(dirs, dir):
			errs = append(errs, fmt.Errorf("README.md lists the provider %q, but %s holds no Go package", name, dir))
		case strings.Contains(strings.ToLower(row[2]), "planned"):
			errs = append(errs, fmt.Errorf("README.md calls the provider %q planned, but %s exists", name, dir))
		}
	}
	for _, d := range dirs {
		if name, ok := strings.CutPrefix(d, "provider/"); ok && !strings.Contains(name, "/") && !listed[name] {
			errs = append(errs, fmt.Errorf("%s is not in README.md's provider table", d))
		}
	}
	return errs
}

// ndCommandRE finds the commands named in a cell of the nd command table.
var ndCommandRE = regexp.MustCompile("`nd ([a-z]+)")

// Commands checks the README's nd command table against the commands
// cmd/nd dispatches (its commands list): each is named in the table's first
// column, and the table names no other.
func Commands(root fs.FS) []error {
	rows, err := readmeTable(root, "| command | what it does |")
	if err != nil {
		return []error{err}
	}
	known, err := ndCommands(root)
	if err != nil {
		return []error{err}
	}
	var errs []error
	var listed []string
	for _, row := range rows {
		for _, m := range ndCommandRE.FindAllStringSubmatch(row[0], -1) {
			listed = append(listed, m[1])
			if !slices.Contains(known, m[1]) {
				errs = append(errs, fmt.Errorf("README.md's command table lists \"nd %s\", which cmd/nd does not know", m[1]))
			}
		}
	}
	for _, c := range known {
		if !slices.Contains(listed, c) {
			errs = append(errs, fmt.Errorf("\"nd %s\" is not in README.md's command table", c))
		}
	}
	return errs
}

// Layout checks the README's layout block: every path it lists exists, and
// every directory with Go files is listed, itself or under a listed
// directory written with a trailing "/" ("*.go" is the root).
func Layout(root fs.FS) []error {
	readme, err := readFile(root, "README.md")
	if err != nil {
		return []error{err}
	}
	block, err := codeBlockAfter(readme, "## Layout")
	if err != nil {
		return []error{fmt.Errorf("README.md: %w", err)}
	}
	dirs, err := goDirs(root)
	if err != nil {
		return []error{err}
	}
	var errs []error
	var exact, trees []string
	for _, l := range block {
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
			continue // a description's continuation
		}
		entry := strings.Fields(l)[0]
		switch {
		case entry == "*.go":
			exact = append(exact, ".")
			continue
		case strings.HasSuffix(entry, "/"):
			entry = strings.TrimSuffix(entry, "/")
			trees = append(trees, entry)
		default:
			exact = append(exact, entry)
		}
		if !isDir(root, entry) {
			errs = append(errs, fmt.Errorf("README.md's layout lists %s, which is not a directory", entry))
		}
	}
	for _, d := range dirs {
		covered := slices.Contains(exact, d) || slices.ContainsFunc(trees, func(t string) bool {
			return d == t || strings.HasPrefix(d, t+"/")
		})
		if !covered {
			errs = append(errs, fmt.Errorf("the package directory %s is not in README.md's layout", d))
		}
	}
	return errs
}
