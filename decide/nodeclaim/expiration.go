package nodeclaim

import (
	"time"

	karpv1 "github.com/stevedore-autoscaler/stevedore/api/karpenter/v1"
)

// ExpiresAt returns when nc expires: its creation time plus its
// spec.expireAfter. It reports false when the NodeClaim never expires
// (expireAfter is Never or unset) or has no creation time yet.
//
// An unset expireAfter is read as "no expiry" rather than as the API server's
// default of 720h: the API server always stores the default, so an unset
// field only appears on NodeClaims built by hand, and expiry is forceful
// (it ignores budgets), so it acts only on what was asked for.
func ExpiresAt(nc *karpv1.NodeClaim) (time.Time, bool) {
	d := nc.Spec.ExpireAfter
	if d == nil || d.IsNever() || nc.CreationTimestamp.IsZero() {
		return time.Time{}, false
	}
	return nc.CreationTimestamp.Add(*d.Duration), true
}

// Expired reports whether nc has expired at now, and when it expires.
func Expired(nc *karpv1.NodeClaim, now time.Time) (at time.Time, expired bool) {
	at, ok := ExpiresAt(nc)
	return at, ok && !now.Before(at)
}
