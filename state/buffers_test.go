package state_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stevedore-autoscaler/stevedore/state"
)

func TestSetBufferPods(t *testing.T) {
	c := state.NewCluster()
	team := types.NamespacedName{Namespace: "team", Name: "spare"}
	alpha := types.NamespacedName{Namespace: "alpha", Name: "other"}
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	c.SetBufferPods(team, []*corev1.Pod{pod("team", "b"), pod("team", "a")})
	c.SetBufferPods(alpha, []*corev1.Pod{pod("alpha", "c")})
	var got []string
	for _, p := range c.Snapshot(time.Unix(0, 0)).BufferPods {
		got = append(got, p.Namespace+"/"+p.Name)
	}
	if want := []string{"alpha/c", "team/a", "team/b"}; !slices.Equal(got, want) {
		t.Errorf("BufferPods = %v, want %v (by namespace and name)", got, want)
	}
	before := c.Changes()
	c.SetBufferPods(team, []*corev1.Pod{pod("team", "b"), pod("team", "a")})
	if c.Changes() != before {
		t.Error("the same pods again counted as a change")
	}
	c.SetBufferPods(team, nil)
	c.SetBufferPods(alpha, nil)
	if c.HasBufferPods() || len(c.Snapshot(time.Unix(1, 0)).BufferPods) != 0 {
		t.Error("forgotten buffers still have pods")
	}
}
