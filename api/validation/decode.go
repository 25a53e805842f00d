package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// document is one YAML or JSON document of a stream.
type document struct {
	index int    // 1-based, counting non-empty documents
	line  int    // 1-based line of the file where the document starts
	data  []byte // the document text
	json  bool   // data is JSON
}

// splitDocuments splits a stream into documents. JSON streams (starting with
// '{' or '[') are split into their top-level values; anything else is YAML,
// split at "---" lines the way kubectl splits it. Empty documents (only
// comments and blank lines) are dropped. A JSON syntax error ends the stream
// and is returned with the documents read so far.
func splitDocuments(data []byte) ([]document, *document, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return splitJSON(data)
	}
	return splitYAML(data), nil, nil
}

func splitJSON(data []byte) ([]document, *document, error) {
	var docs []document
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := dec.InputOffset()
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil, nil
		}
		// The value starts after any whitespace that precedes it.
		rest := data[start:]
		skip := len(rest) - len(bytes.TrimLeft(rest, " \t\r\n"))
		d := document{index: len(docs) + 1, line: 1 + bytes.Count(data[:int(start)+skip], []byte("\n")), json: true}
		if err != nil {
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				err = fmt.Errorf("invalid JSON at line %d: %v", 1+bytes.Count(data[:syn.Offset], []byte("\n")), err)
			}
			return docs, &d, err
		}
		d.data = raw
		docs = append(docs, d)
	}
}

func splitYAML(data []byte) []document {
	var docs []document
	lines := bytes.SplitAfter(data, []byte("\n"))
	var cur bytes.Buffer
	start := 1
	flush := func(next int) {
		if !yamlEmpty(cur.Bytes()) {
			docs = append(docs, document{index: len(docs) + 1, line: start, data: append([]byte(nil), cur.Bytes()...)})
		}
		cur.Reset()
		start = next
	}
	for i, line := range lines {
		if isYAMLSeparator(line) {
			flush(i + 2)
			continue
		}
		cur.Write(line)
	}
	flush(0)
	return docs
}

// isYAMLSeparator matches a "---" line, optionally followed by a comment.
func isYAMLSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := strings.TrimSpace(string(line[3:]))
	return rest == "" || strings.HasPrefix(rest, "#")
}

func yamlEmpty(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("...")) {
			return false
		}
	}
	return true
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// shiftLines rewrites "line N" in a YAML error to count from the start of
// the file instead of the start of the document.
func shiftLines(msg string, docStart int) string {
	return yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+docStart-1)
	})
}

var duplicateKeyRE = regexp.MustCompile(`line (\d+): key (".*") already set in map`)

// decodeDocument turns a document into an object the way kubectl does: YAML
// is converted to JSON and the JSON is decoded with Kubernetes' number
// handling (integers as int64, other numbers as float64). It returns the
// value (nil for an empty document), warnings about the text, and an error
// when the document cannot be decoded.
func decodeDocument(d document) (interface{}, []Problem, error) {
	j := d.data
	var warnings []Problem
	if !d.json {
		var err error
		j, err = yaml.YAMLToJSON(d.data)
		if err != nil {
			return nil, nil, errors.New(shiftLines(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "), d.line))
		}
		if _, err := yaml.YAMLToJSONStrict(d.data); err != nil {
			for _, m := range duplicateKeyRE.FindAllStringSubmatch(err.Error(), -1) {
				n, _ := strconv.Atoi(m[1])
				warnings = append(warnings, Problem{
					Message:  fmt.Sprintf("duplicate key %s at line %d; kubectl keeps only the last value", m[2], n+d.line-1),
					Fix:      "merge the two entries into one",
					Severity: SeverityWarning,
				})
			}
		}
	}
	var v interface{}
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, warnings, err
	}
	return v, warnings, nil
}
