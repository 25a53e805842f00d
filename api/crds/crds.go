// Package crds holds the CustomResourceDefinitions of the APIs that stevedore
// serves (NodePool, NodeClaim and NodeOverlay in karpenter.sh, EC2NodeClass in
// karpenter.k8s.aws, CapacityBuffer in autoscaling.x-k8s.io), generated from
// the types in the api packages by hack/generate.sh and embedded in the
// binary, so that stevedore can install or check them itself.
//
// Do not edit the YAML files by hand: change the types and their markers, then
// run hack/generate.sh. A test fails when the files are out of date.
package crds

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// fileNames returns the embedded CRD file names in lexical order, which is the
// order of YAML and All.
func fileNames() []string {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		// The pattern is a constant and valid, so this cannot happen.
		panic(err)
	}
	slices.Sort(names)
	return names
}

// YAML returns every CRD as one multi-document YAML stream, each document
// starting with "---", in the same order as All. It is ready for
// kubectl apply -f -.
func YAML() []byte {
	var out bytes.Buffer
	for _, name := range fileNames() {
		data, err := files.ReadFile(name)
		if err != nil {
			panic(err) // the name came from the same embedded file system
		}
		data = bytes.TrimSpace(data)
		if !bytes.HasPrefix(data, []byte("---")) {
			out.WriteString("---\n")
		}
		out.Write(data)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// All returns every CRD, decoded, in a stable order (by file name). Each call returns new objects
// that the caller may change.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range fileNames() {
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding CRD %s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
