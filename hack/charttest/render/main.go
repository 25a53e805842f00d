// Command render renders the Helm chart in charts/stevedore with the Helm
// library, as `helm template RELEASE charts/stevedore -n NAMESPACE -f
// VALUES` would, and writes the manifests to standard output as one YAML
// stream. The end-to-end tests apply what it prints, so that they test the
// chart's own RBAC and Deployment rather than a copy of them.
//
//	go run ./render -chart ../../charts/stevedore -release stevedore -namespace stevedore -values '{"settings":{"clusterName":"c"}}'
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

func main() {
	chartDir := flag.String("chart", "../../charts/stevedore", "the chart's directory")
	release := flag.String("release", "stevedore", "the release name")
	namespace := flag.String("namespace", "stevedore", "the release namespace")
	values := flag.String("values", "{}", "values over the chart's defaults, as a JSON object")
	flag.Parse()
	if err := render(*chartDir, *release, *namespace, *values); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func render(chartDir, release, namespace, values string) error {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return err
	}
	var vals map[string]any
	if err := json.Unmarshal([]byte(values), &vals); err != nil {
		return fmt.Errorf("-values is not a JSON object: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true, Revision: 1}
	top, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return err
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return err
	}
	// In file-name order, so that the output is the same on every run.
	names := make([]string, 0, len(files))
	for n := range files {
		if strings.HasSuffix(n, ".yaml") && strings.TrimSpace(files[n]) != "" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Printf("---\n# Source: %s\n%s\n", n, strings.TrimSpace(files[n]))
	}
	return nil
}
