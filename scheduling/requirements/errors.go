package requirements

import (
	"strconv"
	"strings"
)

// valuesInErrors is how many values an error message lists per requirement;
// an instance-type requirement can hold hundreds.
const valuesInErrors = 8

// IncompatibleError reports the label key on which a requirement cannot be
// met: by the other set of requirements (Compatible) or by a node's labels
// (Matches).
type IncompatibleError struct {
	// Key is the normalized label key.
	Key string
	// Required is the requirement that cannot be met: other's in Compatible,
	// the receiver's in Matches.
	Required Requirement
	// Offered is what the defining side offers for Key: the receiver's
	// requirement in Compatible, or In [value] for the node's label in
	// Matches. It is meaningful only when Defined is true.
	Offered Requirement
	// Defined is false when the defining side does not define Key at all,
	// or the node does not have the label.
	Defined bool
}

// Error names the key and both sides, for example
// `label "kubernetes.io/arch": requires In [arm64], offered In [amd64]` or
// `label "example.com/team": requires In [a], but the label is undefined`.
func (e *IncompatibleError) Error() string {
	var b strings.Builder
	b.WriteString("label ")
	b.WriteString(strconv.Quote(e.Key))
	b.WriteString(": requires ")
	e.Required.describe(&b, valuesInErrors)
	if e.Defined {
		b.WriteString(", offered ")
		e.Offered.describe(&b, valuesInErrors)
	} else {
		b.WriteString(", but the label is undefined")
	}
	return b.String()
}
