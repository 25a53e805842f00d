package validation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
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

var yamlErrorRE = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// parserProblems are the problems the YAML parser (as opposed to its scanner)
// reports. go.yaml.in/yaml/v2, which sigs.k8s.io/yaml uses, writes "line N"
// with N counted from 0 for these and from 1 for the scanner's, and leaves
// the line out when the problem is on the document's first line.
var parserProblems = []string{
	"did not find expected <stream-start>",
	"did not find expected <document start>",
	"did not find expected node content",
	"did not find expected key",
	"did not find expected '-' indicator",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"found duplicate %YAML directive",
	"found duplicate %TAG directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// scannerProblems are the scanner's problems (prefixes of them).
var scannerProblems = []string{
	"block sequence entries are not allowed",
	"could not find expected",
	"did not find URI escaped octet",
	"did not find expected",
	"did not find the expected '>'",
	"exceeded max depth",
	"found a tab character",
	"found an incorrect",
	"found an indentation indicator equal to 0",
	"found character that cannot start any token",
	"found extremely long version number",
	"found invalid Unicode character escape code",
	"found unexpected",
	"found unknown",
	"mapping keys are not allowed",
	"mapping values are not allowed",
}

// yamlErrorLine rewrites a YAML syntax error of a document so that it names
// the line of the file the problem is on: the parser's line counts from the
// start of the document, from 0 or 1 depending on the problem (see
// parserProblems), or is missing. Errors that are not about a position in the
// text (an unknown anchor, say) are returned as they are.
func yamlErrorLine(msg string, d document) string {
	m := yamlErrorRE.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg
	}
	problem := msg[m[1]:]
	line := 0 // 0-based, from the start of the document
	switch {
	case slices.ContainsFunc(parserProblems, func(p string) bool { return strings.HasPrefix(problem, p) }):
		if m[2] >= 0 {
			line, _ = strconv.Atoi(msg[m[2]:m[3]])
		}
	case slices.ContainsFunc(scannerProblems, func(p string) bool { return strings.HasPrefix(problem, p) }):
		if m[2] >= 0 {
			n, _ := strconv.Atoi(msg[m[2]:m[3]])
			line = n - 1
		}
	default:
		return msg
	}
	// A problem at the end of the stream is past the document's last line
	// (after its final line break): report the last line.
	last := bytes.Count(d.data, []byte("\n"))
	if len(d.data) > 0 && d.data[len(d.data)-1] != '\n' {
		last++
	}
	if line > last-1 {
		line = last - 1
	}
	if line < 0 {
		line = 0
	}
	return fmt.Sprintf("yaml: line %d: %s", d.line+line, problem)
}

var duplicateKeyRE = regexp.MustCompile(`line (\d+): key (".*") already set in map`)

// decodeDocument turns a document into an object the way kubectl does: YAML
// is converted to JSON and the JSON is decoded with Kubernetes' number
// handling (integers as int64, other numbers as float64). It returns the
// value (nil for an empty document), warnings about the text, and an error
// when the document cannot be decoded.
// binaryTagRE finds a YAML !!binary tag on a value.
var binaryTagRE = regexp.MustCompile(`(?m)(?:^|[\s:\[{,-])!!binary\b`)

func decodeDocument(d document) (interface{}, []Problem, error) {
	j := d.data
	var warnings []Problem
	if !d.json {
		var err error
		j, err = yaml.YAMLToJSON(d.data)
		if err != nil {
			return nil, nil, errors.New(yamlErrorLine(strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "), d))
		}
		for _, loc := range binaryTagRE.FindAllIndex(d.data, -1) {
			n := bytes.Count(d.data[:loc[0]], []byte("\n")) + 1
			warnings = append(warnings, Problem{
				Message:  fmt.Sprintf("a !!binary value at line %d is decoded from base64: the field holds the decoded bytes, not the text written", n+d.line-1),
				Fix:      "drop the !!binary tag and write the value as text (binaryData and other base64 fields take the base64 text untagged)",
				Severity: SeverityWarning,
			})
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
