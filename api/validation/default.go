package validation

import (
	"sync"

	"github.com/stevedore-autoscaler/stevedore/api/crds"
)

var defaultValidator = sync.OnceValues(func() (*Validator, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	return New(all)
})

// Default returns a Validator for the CRDs stevedore serves. It is built once
// and shared; a Validator is safe for concurrent use.
func Default() (*Validator, error) {
	return defaultValidator()
}
