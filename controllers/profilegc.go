package controllers

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/stevedore-autoscaler/stevedore/api/wellknown"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/garbagecollect"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/nodeclass"
)

// ProfileCollector deletes the managed instance profiles nothing uses any
// more (garbagecollect.InstanceProfiles): not an EC2NodeClass's current
// profile, and not the profile any NodeClaim was launched with
// (karpenter.k8s.aws/instance-profile-name). Karpenter lists the cluster's
// profiles every 30 minutes; the collector does too, and besides lists them
// on the next garbage-collection round after the profiles in use change (a
// role change, the last node of an old role gone), so that an old role's
// profile goes within minutes of its last node. It makes no call with
// --isolated-vpc. Rounds are serialized by the caller.
type ProfileCollector struct {
	last  time.Time
	inUse string
}

// collect runs a round if one is due at now.
func (p *ProfileCollector) collect(ctx context.Context, logger logr.Logger, deps Deps, now time.Time) {
	// With --isolated-vpc there is no IAM endpoint to reach, as in
	// Karpenter, which turns its collector off there.
	if deps.Region == "" || deps.Settings.ClusterName == "" || deps.Settings.IsolatedVPC {
		return
	}
	snap := deps.State.Snapshot(now)
	used := map[string]bool{}
	for _, nc := range snap.NodeClasses {
		if nc.Status.InstanceProfile != "" {
			used[nc.Status.InstanceProfile] = true
		}
	}
	for _, n := range snap.Nodes {
		if n.NodeClaim != nil {
			if name := n.NodeClaim.Annotations[wellknown.AnnotationInstanceProfileName]; name != "" {
				used[name] = true
			}
		}
	}
	names := make([]string, 0, len(used))
	for name := range used {
		names = append(names, name)
	}
	slices.Sort(names)
	inUse := strings.Join(names, ",")
	if !p.last.IsZero() && inUse == p.inUse && now.Sub(p.last) < garbagecollect.ProfileInterval {
		return
	}
	deleted, err := garbagecollect.InstanceProfiles(ctx, deps.Clients.IAM, nodeclass.ProfilePathPrefixes(deps.Region, deps.Settings.ClusterName),
		func(name string) bool { return used[name] }, now, garbagecollect.ProfileGrace)
	for _, name := range deleted {
		logger.Info("deleted unused instance profile", "instanceProfile", name)
	}
	if err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "deleting unused instance profiles")
		}
		return // try again next round
	}
	p.last, p.inUse = now, inUse
}
