package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
)

// ReadFlags reads a component's flag file from the configuration directory:
// one command-line argument per line, blank lines and lines starting with #
// ignored, ${NAME} replaced from vars. A variable the file uses but vars does
// not define is an error, so that a typo cannot become an empty path.
func ReadFlags(path string, vars map[string]string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseFlags(path, data, vars)
}

func parseFlags(name string, data []byte, vars map[string]string) ([]string, error) {
	var args []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "--") {
			return nil, fmt.Errorf("%s:%d: %q is not a --flag", name, n, line)
		}
		var missing []string
		expanded := os.Expand(line, func(v string) string {
			val, ok := vars[v]
			if !ok {
				missing = append(missing, v)
			}
			return val
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("%s:%d: undefined variable %s (defined: %s)", name, n, strings.Join(missing, ", "), strings.Join(sortedKeys(vars), ", "))
		}
		args = append(args, expanded)
	}
	return args, sc.Err()
}

// splitFlag splits "--name=value" into name and value; has reports whether
// there was a value at all ("--name" alone has none).
func splitFlag(arg string) (name, value string, has bool) {
	name, value, has = strings.Cut(strings.TrimPrefix(arg, "--"), "=")
	return name, value, has
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
