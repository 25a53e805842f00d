package validation

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Source is the text of one manifest file, or of standard input ("-").
type Source struct {
	Name string
	Data []byte
}

// Input reads the manifests a command is given: files, directories and "-"
// for standard input, the same way for every command (validate, plan,
// simulate). It reads each path once, so that the validator and the command
// that decodes the objects afterwards see the same bytes; standard input can
// only be read once anyway.
type Input struct {
	stdin io.Reader
	read  map[string][]Source
	// skipped holds, per path, the warnings about the directory entries
	// that were left out.
	skipped map[string][]Problem
}

// NewInput returns an Input that reads "-" from stdin; with a nil stdin, "-"
// is an error.
func NewInput(stdin io.Reader) *Input {
	return &Input{stdin: stdin, read: map[string][]Source{}, skipped: map[string][]Problem{}}
}

// Read returns the manifests of path p: standard input for "-", the file p,
// or, for a directory, its *.yaml, *.yml and *.json files, recursively, in
// lexical order, skipping hidden directories. Only regular files are read
// (symbolic links to them included): a named pipe, a socket or a device given
// as p is an error, and one in a directory is skipped with a warning (see
// PathsFrom), because reading it could block forever. The error is for paths
// that cannot be read.
func (in *Input) Read(p string) ([]Source, error) {
	if s, ok := in.read[p]; ok {
		return s, nil
	}
	var sources []Source
	if p == "-" {
		if in.stdin == nil {
			return nil, fmt.Errorf("reading stdin: no input")
		}
		data, err := io.ReadAll(in.stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		sources = []Source{{Name: "-", Data: data}}
	} else {
		files, skipped, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := readRegular(f)
			if err != nil {
				return nil, err
			}
			sources = append(sources, Source{Name: f, Data: data})
		}
		in.skipped[p] = skipped
	}
	in.read[p] = sources
	return sources, nil
}

// manifestFiles returns p itself when it is a regular file, or the
// manifests under it when it is a directory: *.yaml, *.yml and *.json
// regular files, recursively, in lexical order, skipping hidden directories.
// Every command that reads manifests finds them this way (see Input). A
// directory entry with a manifest's name that is not a regular file is
// skipped with a warning.
func manifestFiles(p string) ([]string, []Problem, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	if !info.IsDir() {
		if !info.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("%s is %s, not a regular file or a directory: to read a stream, pipe it to - (standard input)", p, describeMode(info.Mode()))
		}
		return []string{p}, nil, nil
	}
	var files []string
	var skipped []Problem
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != p && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		mode := d.Type()
		if mode&fs.ModeSymlink != 0 {
			// A link is read when it leads to a regular file; one that
			// leads nowhere (dangling, or a loop) is skipped like any
			// other entry that is not a manifest file.
			info, err := os.Stat(path)
			if err != nil {
				skipped = append(skipped, Problem{
					Source:   path,
					Message:  "skipped: a symbolic link that leads to no file (" + linkError(err) + ")",
					Fix:      "point the link at a manifest file, or remove it from the directory",
					Severity: SeverityWarning,
				})
				return nil
			}
			mode = info.Mode()
		}
		if !mode.IsRegular() {
			skipped = append(skipped, Problem{
				Source:   path,
				Message:  fmt.Sprintf("skipped: %s, not a regular file", describeMode(mode)),
				Fix:      "remove it from the directory; to read a stream, pipe it to - (standard input)",
				Severity: SeverityWarning,
			})
			return nil
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(files)
	return files, skipped, nil
}

// linkError says briefly why a symbolic link cannot be followed.
func linkError(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "its target does not exist"
	case errors.Is(err, syscall.ELOOP):
		return "it loops"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// describeMode names the type of a file that is not a regular one.
func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// readRegular reads a file that was a regular file when it was listed. It
// opens it without blocking and checks again, so that a named pipe put in
// its place meanwhile is refused instead of waited on.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, not a regular file: to read a stream, pipe it to - (standard input)", path, describeMode(info.Mode()))
	}
	return io.ReadAll(f)
}
