package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func podWith(f func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if f != nil {
		f(p)
	}
	return p
}

func TestPodTier(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want tier
	}{
		{"plain", podWith(nil), tierNonCriticalNonDaemon},
		{"daemon", podWith(daemon), tierNonCriticalDaemon},
		{"cluster critical", podWith(critical), tierCriticalNonDaemon},
		{"node critical daemon", podWith(func(p *corev1.Pod) { daemon(p); p.Spec.PriorityClassName = priorityNodeCritical }), tierCriticalDaemon},
		{"other priority", podWith(func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" }), tierNonCriticalNonDaemon},
	}
	for _, tc := range tests {
		if got := podTier(tc.pod); got != tc.want {
			t.Errorf("%s: tier %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestMustLeave(t *testing.T) {
	deleting := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0.Add(-ago)} }
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"running", podWith(nil), true},
		{"succeeded", podWith(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false},
		{"failed", podWith(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false},
		{"owned by node", podWith(func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n"}}
		}), false},
		{"mirror annotation", podWith(func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
		}), false},
		{"tolerates everything", podWith(tolerateAll), false},
		{"tolerates disrupted key", podWith(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: wellknown.TaintKeyDisrupted, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}), false},
		{"tolerates disrupted only NoExecute", podWith(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: wellknown.TaintKeyDisrupted, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}
		}), true},
		{"tolerates another key", podWith(func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "other", Operator: corev1.TolerationOpExists}}
		}), true},
		{"do-not-disrupt still must leave", podWith(doNotDisruptPod), true},
		{"terminating", podWith(deleting(30 * time.Second)), true},
		{"stuck terminating", podWith(deleting(2 * time.Minute)), false},
	}
	for _, tc := range tests {
		if got := mustLeave(tc.pod, t0); got != tc.want {
			t.Errorf("%s: mustLeave = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDoNotDisrupt(t *testing.T) {
	started := func(ago time.Duration, v string) *corev1.Pod {
		return podWith(func(p *corev1.Pod) {
			p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: v}
			p.Status.StartTime = &metav1.Time{Time: t0.Add(-ago)}
		})
	}
	notStarted := podWith(func(p *corev1.Pod) { p.Annotations = map[string]string{wellknown.AnnotationDoNotDisrupt: "30m"} })
	tests := []struct {
		name   string
		pod    *corev1.Pod
		want   bool
		reason string
		until  time.Time
	}{
		{"none", podWith(nil), false, "", time.Time{}},
		{"true", started(time.Hour, "true"), true, "", time.Time{}},
		{"false", started(time.Hour, "false"), false, ReasonInvalidDoNotDisruptAnnotation, time.Time{}},
		{"duration active", started(10*time.Minute, "30m"), true, ReasonDoNotDisruptUntil, t0.Add(20 * time.Minute)},
		{"duration elapsed", started(time.Hour, "30m"), false, ReasonDoNotDisruptGracePeriodElapsed, t0.Add(-30 * time.Minute)},
		{"invalid", started(time.Minute, "soon"), false, ReasonInvalidDoNotDisruptAnnotation, time.Time{}},
		{"zero is invalid", started(time.Minute, "0s"), false, ReasonInvalidDoNotDisruptAnnotation, time.Time{}},
		{"duration of a pod not started", notStarted, true, "", time.Time{}},
	}
	for _, tc := range tests {
		got, reason, until := doNotDisrupt(tc.pod, t0)
		if got != tc.want || reason != tc.reason || !until.Equal(tc.until) {
			t.Errorf("%s: doNotDisrupt = %v, %q, %s; want %v, %q, %s", tc.name, got, reason, until, tc.want, tc.reason, tc.until)
		}
	}
}

func TestForceDeleteGrace(t *testing.T) {
	deadline := t0.Add(time.Minute)
	grace := func(s int64) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		now       time.Time
		wantGrace int64
		wantDue   bool
	}{
		{"default grace, too early", podWith(nil), t0, 0, false},
		{"default grace, due", podWith(nil), deadline.Add(-30 * time.Second), 30, true},
		{"long grace, clamped to what is left", podWith(grace(600)), t0, 60, true},
		{"past deadline, at least 1s", podWith(nil), deadline.Add(time.Hour), 1, true},
		{"terminating within deadline", podWith(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: deadline.Add(-time.Second)}
		}), t0, 0, false},
		{"terminating past deadline", podWith(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: deadline.Add(time.Hour)}
			g := int64(3600)
			p.DeletionGracePeriodSeconds = &g
		}), t0, 60, true},
		{"terminating past deadline, already short", podWith(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: deadline.Add(time.Second)}
			g := int64(1)
			p.DeletionGracePeriodSeconds = &g
		}), deadline, 0, false},
	}
	for _, tc := range tests {
		g, due := forceDeleteGrace(tc.pod, deadline, tc.now)
		if g != tc.wantGrace || due != tc.wantDue {
			t.Errorf("%s: forceDeleteGrace = %d, %v; want %d, %v", tc.name, g, due, tc.wantGrace, tc.wantDue)
		}
	}
}
