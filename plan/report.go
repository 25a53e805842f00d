package plan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/scheduling/lowerbound"
	"github.com/stevedore-autoscaler/stevedore/scheduling/packer"
)

// SchemaVersion is the version of the Report's JSON form. It changes only
// when a field is removed or changes meaning; fields may be added.
const SchemaVersion = 1

// Report is the outcome of a plan, and the --output json document of
// `stevedore plan`. docs/plan.md describes every field.
type Report struct {
	SchemaVersion int `json:"schemaVersion"`
	// NodeClaims the packer proposes, in its order.
	NodeClaims []NodeClaim `json:"nodeClaims"`
	// Placements of pods onto the existing nodes given.
	Placements []Placement `json:"placements"`
	// PricePerHour is the sum of the NodeClaims' prices, in USD.
	PricePerHour float64 `json:"pricePerHour"`
	// LowerBound on the price of any plan for the pods on new NodeClaims.
	LowerBound LowerBound `json:"lowerBound"`
	// Unschedulable pods, with the reason per NodePool.
	Unschedulable []PodProblem `json:"unschedulable"`
	// Ignored pods, which the packer does not consider at all.
	Ignored []PodProblem `json:"ignored"`
	// Assumptions the plan was made under.
	Assumptions Assumptions `json:"assumptions"`
	// Warnings about the manifests, sorted.
	Warnings []string `json:"warnings"`
}

// NodeClaim is a node the plan would launch.
type NodeClaim struct {
	NodePool string `json:"nodePool"`
	// InstanceTypes that fit the pods, cheapest first. NodeClaims with the
	// same list share it: read it, do not change it.
	InstanceTypes []string `json:"instanceTypes"`
	CapacityTypes []string `json:"capacityTypes"`
	Zones         []string `json:"zones"`
	// PricePerHour of the cheapest offering among the instance types.
	PricePerHour float64 `json:"pricePerHour"`
	// Requests of its pods plus DaemonSet overhead.
	Requests corev1.ResourceList `json:"requests"`
	// Pods as namespace/name.
	Pods []string `json:"pods"`
	// MinValuesRelaxed is true when the BestEffort minValues policy lowered
	// a minValues of the NodePool for this NodeClaim (the controller
	// annotates it karpenter.sh/nodeclaim-min-values-relaxed).
	MinValuesRelaxed bool `json:"minValuesRelaxed,omitempty"`
}

// Placement is a pod put on an existing node.
type Placement struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

// PodProblem says why a pod was not placed.
type PodProblem struct {
	Pod       string    `json:"pod"`
	Reason    string    `json:"reason"`
	NodePools []Verdict `json:"nodePools"`
}

// Verdict is why one NodePool could not take a pod.
type Verdict struct {
	NodePool string `json:"nodePool"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

// LowerBound is a price below which no plan for the same pods can go; see
// package lowerbound.
type LowerBound struct {
	// PricePerHour is the bound; 0 when no pod goes on a new NodeClaim.
	PricePerHour float64 `json:"pricePerHour"`
	// Ratio is the plan's PricePerHour over the bound (1 is optimal); 0
	// when the bound is 0.
	Ratio float64 `json:"ratio"`
	// Resources is the bound from cpu and memory alone.
	Resources float64 `json:"resourcesPricePerHour"`
	// Mix is the fractional cover behind Resources: at most two instance
	// types, by name, with fractional machine counts.
	Mix []Share `json:"mix"`
	// SeparatedBy names the group of pods whose required hostname
	// anti-affinity raised the bound above Resources, if any.
	SeparatedBy string `json:"separatedBy,omitempty"`
}

// Share is a fractional number of machines of one instance type.
type Share struct {
	InstanceType string  `json:"instanceType"`
	Count        float64 `json:"count"`
}

// Assumptions are the inputs of a plan that do not come from the manifests.
type Assumptions struct {
	Region            string   `json:"region"`
	Zones             []string `json:"zones"`
	SpotPriceFraction float64  `json:"spotPriceFraction"`
	PreferencePolicy  string   `json:"preferencePolicy"`
	MinValuesPolicy   string   `json:"minValuesPolicy"`
	// Prices says where prices come from.
	Prices string `json:"prices"`
	// NodePools with the number of instance types each may launch.
	NodePools []PoolTypes `json:"nodePools"`
	// Pods to place, DaemonSets, existing nodes and pods already on them.
	Pods          int `json:"pods"`
	DaemonSets    int `json:"daemonSets"`
	ExistingNodes int `json:"existingNodes"`
	BoundPods     int `json:"boundPods"`
	// Skipped objects (Kind/name) that a plan does not use.
	Skipped []string `json:"skipped"`
}

// PoolTypes is a NodePool and how many instance types it may launch.
type PoolTypes struct {
	Name          string `json:"name"`
	InstanceTypes int    `json:"instanceTypes"`
}

// NewReport reports the packer's result for a prepared input.
func NewReport(p *Prepared, res packer.Result) *Report {
	r := &Report{
		SchemaVersion: SchemaVersion,
		NodeClaims:    []NodeClaim{},
		Placements:    []Placement{},
		Unschedulable: podProblems(res.Unschedulable),
		Ignored:       podProblems(res.Ignored),
		Warnings:      append([]string{}, p.Warnings...),
		Assumptions: Assumptions{
			Region:            p.Options.Offerings.Region,
			Zones:             append([]string{}, p.Options.Offerings.Zones...),
			SpotPriceFraction: p.Options.Offerings.SpotPriceFraction,
			PreferencePolicy:  string(p.Options.PreferencePolicy),
			MinValuesPolicy:   string(p.Options.MinValuesPolicy),
			Prices:            "embedded catalog, " + p.Options.Offerings.Region + " on-demand; spot at spotPriceFraction of on-demand",
			NodePools:         []PoolTypes{},
			Pods:              len(p.Input.Pods),
			DaemonSets:        len(p.Input.DaemonSetPods),
			ExistingNodes:     len(p.Input.Nodes),
			BoundPods:         p.Bound,
			Skipped:           append([]string{}, p.Skipped...),
		},
	}
	for _, pool := range p.Input.NodePools {
		r.Assumptions.NodePools = append(r.Assumptions.NodePools, PoolTypes{Name: pool.Name, InstanceTypes: len(pool.InstanceTypes)})
	}
	// The packer hands claims made from the same template the same list of
	// up to 600 types; one copy of each serves every claim that has it
	// (a copy per claim grows with claims times types).
	type listKey struct {
		data *string
		n    int
	}
	typeLists := map[listKey][]string{}
	for _, nc := range res.NodeClaims {
		k := listKey{unsafe.SliceData(nc.InstanceTypes), len(nc.InstanceTypes)}
		types, ok := typeLists[k]
		if !ok {
			types = append([]string{}, nc.InstanceTypes...)
			typeLists[k] = types
		}
		out := NodeClaim{
			NodePool:         nc.NodePool,
			InstanceTypes:    types,
			CapacityTypes:    append([]string{}, nc.CapacityTypes...),
			Zones:            append([]string{}, nc.Zones...),
			PricePerHour:     nc.PricePerHour,
			Requests:         nc.Requests.ResourceList(),
			Pods:             podNames(nc.Pods),
			MinValuesRelaxed: nc.MinValuesRelaxed,
		}
		r.NodeClaims = append(r.NodeClaims, out)
		r.PricePerHour += nc.PricePerHour
	}
	for _, pl := range res.Placements {
		r.Placements = append(r.Placements, Placement{Pod: pl.Pod.String(), Node: pl.Node})
	}
	b := Bound(p.Input, res)
	r.LowerBound = LowerBound{
		PricePerHour: b.PricePerHour,
		Ratio:        lowerbound.Ratio(r.PricePerHour, b.PricePerHour),
		Resources:    b.Resources,
		Mix:          []Share{},
		SeparatedBy:  b.Group,
	}
	for _, m := range b.Mix {
		r.LowerBound.Mix = append(r.LowerBound.Mix, Share{InstanceType: m.Name, Count: m.Count})
	}
	return r
}

func podNames(pods []types.NamespacedName) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.String())
	}
	return out
}

func podProblems(in []packer.Unschedulable) []PodProblem {
	out := make([]PodProblem, 0, len(in))
	for _, u := range in {
		pp := PodProblem{Pod: u.Pod.String(), Reason: u.Reason, NodePools: []Verdict{}}
		for _, v := range u.NodePools {
			pp.NodePools = append(pp.NodePools, Verdict(v))
		}
		out = append(out, pp)
	}
	return out
}

// WriteJSON writes r as indented JSON: the bytes json.MarshalIndent(r, "",
// "  ") gives, and a newline. NodeClaims and Placements are written one at
// a time, so that the whole document (half a gigabyte for 100,000 pods,
// every NodeClaim listing its instance types) is never held in memory.
func (r *Report) WriteJSON(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	fields := []struct {
		name string
		// one is the whole value; each, when set, writes a slice's
		// elements one by one.
		one  any
		each func(func(any) error) error
		n    int
	}{
		{name: "schemaVersion", one: r.SchemaVersion},
		{name: "nodeClaims", one: r.NodeClaims, n: len(r.NodeClaims), each: func(f func(any) error) error {
			lists := typeLists{}
			for i := range r.NodeClaims {
				b, err := lists.claimJSON(&r.NodeClaims[i])
				if err != nil {
					return err
				}
				if err := f(json.RawMessage(b)); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "placements", one: r.Placements, n: len(r.Placements), each: func(f func(any) error) error {
			for i := range r.Placements {
				if err := f(&r.Placements[i]); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "pricePerHour", one: r.PricePerHour},
		{name: "lowerBound", one: r.LowerBound},
		{name: "unschedulable", one: r.Unschedulable},
		{name: "ignored", one: r.Ignored},
		{name: "assumptions", one: r.Assumptions},
		{name: "warnings", one: r.Warnings},
	}
	bw.WriteString("{\n")
	for k, f := range fields {
		bw.WriteString(`  "` + f.name + `": `)
		if f.each != nil && f.n > 0 {
			bw.WriteString("[\n")
			i := 0
			err := f.each(func(v any) error {
				b, ok := v.(json.RawMessage)
				if !ok {
					var err error
					if b, err = json.MarshalIndent(v, "    ", "  "); err != nil {
						return err
					}
				}
				bw.WriteString("    ")
				bw.Write(b)
				if i++; i < f.n {
					bw.WriteString(",")
				}
				bw.WriteString("\n")
				return nil
			})
			if err != nil {
				return err
			}
			bw.WriteString("  ]")
		} else {
			b, err := json.MarshalIndent(f.one, "  ", "  ")
			if err != nil {
				return err
			}
			bw.Write(b)
		}
		if k < len(fields)-1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	bw.WriteString("}\n")
	return bw.Flush()
}

// listedTypes is how many instance types the text form names per NodeClaim.
const listedTypes = 3

// WriteText writes r for people: a table of NodeClaims, the total price,
// the lower bound and ratio, the placements on existing nodes, and every
// pod that could not be placed with its reasons.
func (r *Report) WriteText(w io.Writer) error {
	b := &strings.Builder{}
	if len(r.NodeClaims) > 0 {
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODEPOOL\tINSTANCE TYPES\tCAPACITY TYPES\tZONES\tPODS\t$/HOUR")
		for _, nc := range r.NodeClaims {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", nc.NodePool, typeList(nc.InstanceTypes), strings.Join(nc.CapacityTypes, ","),
				strings.Join(nc.Zones, ","), len(nc.Pods), money(nc.PricePerHour))
		}
		tw.Flush()
		b.WriteString("\n")
	}
	pods := 0
	for _, nc := range r.NodeClaims {
		pods += len(nc.Pods)
	}
	fmt.Fprintf(b, "%s for %s: $%s/hour\n", count(len(r.NodeClaims), "NodeClaim"), count(pods, "pod"), money(r.PricePerHour))
	relaxed := 0
	for _, nc := range r.NodeClaims {
		if nc.MinValuesRelaxed {
			relaxed++
		}
	}
	if relaxed > 0 {
		fmt.Fprintf(b, "%s with minValues relaxed (too few instance types fit for a NodePool's minValues)\n", count(relaxed, "NodeClaim"))
	}
	if r.LowerBound.PricePerHour > 0 {
		fmt.Fprintf(b, "lower bound: $%s/hour, ratio %.2f", money(r.LowerBound.PricePerHour), r.LowerBound.Ratio)
		if r.LowerBound.SeparatedBy != "" {
			fmt.Fprintf(b, " (raised by the pods of %s, which need separate nodes)", r.LowerBound.SeparatedBy)
		}
		b.WriteString("\n")
	}
	if len(r.Placements) > 0 {
		fmt.Fprintf(b, "%s placed on existing nodes\n", count(len(r.Placements), "pod"))
	}
	writeProblems(b, "unschedulable", r.Unschedulable)
	writeProblems(b, "ignored", r.Ignored)
	if len(r.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, warning := range r.Warnings {
			fmt.Fprintf(b, "  %s\n", warning)
		}
	}
	a := r.Assumptions
	fmt.Fprintf(b, "\nassuming catalog prices for %s, spot at %s of on-demand, zones %s, preference policy %s, minValues policy %s, %d existing nodes\n",
		a.Region, strconv.FormatFloat(a.SpotPriceFraction, 'f', -1, 64), strings.Join(a.Zones, ","), a.PreferencePolicy, a.MinValuesPolicy, a.ExistingNodes)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeProblems(b *strings.Builder, what string, problems []PodProblem) {
	if len(problems) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s %s:\n", count(len(problems), "pod"), what)
	for _, p := range problems {
		fmt.Fprintf(b, "  %s: %s\n", p.Pod, p.Reason)
		for _, v := range p.NodePools {
			fmt.Fprintf(b, "    NodePool %s: %s: %s\n", v.NodePool, v.Code, v.Message)
		}
	}
}

// count returns "1 pod", "2 pods".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// typeList names the first instance types and counts the rest.
func typeList(names []string) string {
	if len(names) <= listedTypes {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s (+%d more)", strings.Join(names[:listedTypes], ", "), len(names)-listedTypes)
}

// money formats a price per hour with four decimals, enough for the
// cheapest spot types.
func money(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e4)/1e4, 'f', 4, 64)
}

// typeLists holds the indented JSON of the instance-type lists that
// NodeClaims share (NewReport gives the claims of one template one list of
// up to 600 names), so that WriteJSON indents each list once rather than
// once per claim: at 100,000 pods the lists were most of a 500 MB document
// and of the time taken to write it.
type typeLists map[typeListKey][]byte

type typeListKey struct {
	first *string
	n     int
}

// instanceTypesNull is how a claim without its list marshals.
const instanceTypesNull = `"instanceTypes": null`

// claimJSON is json.MarshalIndent(nc, "    ", "  "), byte for byte.
func (l typeLists) claimJSON(nc *NodeClaim) ([]byte, error) {
	if len(nc.InstanceTypes) == 0 {
		return json.MarshalIndent(nc, "    ", "  ")
	}
	key := typeListKey{&nc.InstanceTypes[0], len(nc.InstanceTypes)}
	list, ok := l[key]
	if !ok {
		// The list as it is indented at its place in the claim: the
		// value of the same field, at the same depth.
		b, err := json.MarshalIndent(struct {
			InstanceTypes []string `json:"instanceTypes"`
		}{nc.InstanceTypes}, "    ", "  ")
		if err != nil {
			return nil, err
		}
		start := bytes.Index(b, []byte(`"instanceTypes": `)) + len(`"instanceTypes": `)
		list = b[start:bytes.LastIndexByte(b, '\n')]
		l[key] = list
	}
	bare := *nc
	bare.InstanceTypes = nil
	b, err := json.MarshalIndent(&bare, "    ", "  ")
	if err != nil {
		return nil, err
	}
	// The field's name is the first place the text can appear: string
	// values before it escape their quotes.
	at := bytes.Index(b, []byte(instanceTypesNull)) + len(`"instanceTypes": `)
	out := make([]byte, 0, len(b)+len(list))
	out = append(out, b[:at]...)
	out = append(out, list...)
	return append(out, b[at+len("null"):]...), nil
}
