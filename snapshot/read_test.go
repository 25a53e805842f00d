package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// pagedReader serves pods two at a time whatever the limit asked, answers
// that NodeClaims are not served, and fails or refuses Jobs as told.
type pagedReader struct {
	pods    []corev1.Pod
	limits  []int64
	jobsErr error
}

func (r *pagedReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("Read only lists")
}

func (r *pagedReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	r.limits = append(r.limits, lo.Limit)
	switch l := list.(type) {
	case *corev1.PodList:
		start := 0
		if lo.Continue != "" {
			start, _ = strconv.Atoi(lo.Continue)
		}
		end := min(start+2, len(r.pods))
		l.Items = r.pods[start:end]
		l.Continue = ""
		if end < len(r.pods) {
			l.Continue = strconv.Itoa(end)
		}
	case *karpv1.NodeClaimList:
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "karpenter.sh", Kind: "NodeClaim"}, SearchedVersions: []string{"v1"}}
	case *batchv1.JobList:
		return r.jobsErr
	}
	return nil
}

func TestRead(t *testing.T) {
	var pods []corev1.Pod
	for i := range 5 {
		p := corev1.Pod{}
		p.Namespace, p.Name = "shop", fmt.Sprintf("web-%d", i)
		pods = append(pods, p)
	}
	r := &pagedReader{pods: pods}
	c, err := Read(t.Context(), r, "1.33")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Pods) != 5 || c.Pods[4].Name != "web-4" {
		t.Errorf("read %d pods, want the 5 of three pages", len(c.Pods))
	}
	if c.KubernetesVersion != "1.33" || strings.Join(c.NotServed, ",") != "NodeClaim" {
		t.Errorf("version %q, not served %v", c.KubernetesVersion, c.NotServed)
	}
	for _, l := range r.limits {
		if l != pageSize {
			t.Fatalf("a list asked for %d objects, want pages of %d", l, pageSize)
		}
	}

	r = &pagedReader{jobsErr: apierrors.NewForbidden(schema.GroupResource{Group: "batch", Resource: "jobs"}, "", errors.New("RBAC"))}
	if _, err := Read(t.Context(), r, "1.33"); err == nil || !strings.Contains(err.Error(), "listing Jobs") || !strings.Contains(err.Error(), "docs/snapshot.md") {
		t.Errorf("a refused list: %v, want it named with the ClusterRole to use", err)
	}
	r = &pagedReader{jobsErr: errors.New("connection reset")}
	if _, err := Read(t.Context(), r, "1.33"); err == nil || !strings.Contains(err.Error(), "listing Jobs: connection reset") {
		t.Errorf("a failed list: %v", err)
	}
}
