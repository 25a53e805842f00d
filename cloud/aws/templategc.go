package aws

import (
	"context"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/garbagecollect"
	"github.com/stevedore-autoscaler/stevedore/cloud/aws/launch"
)

// markTemplateUsed records that a launch is about to use a template.
func (p *Provider) markTemplateUsed(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.templateUsed[name] = p.clk.Now()
}

// CollectLaunchTemplates deletes the cluster's launch templates that no
// launch used within garbagecollect.UnusedTemplateTTL (and that are older
// than that), as Karpenter deletes a template when it leaves its cache:
// templates are content-addressed, so every change of a node class, image
// or NodePool leaves the old ones behind. A template deleted here is
// recreated by its next launch. It returns the names deleted.
func (p *Provider) CollectLaunchTemplates(ctx context.Context) ([]string, error) {
	now := p.clk.Now()
	ttl := garbagecollect.UnusedTemplateTTL
	p.mu.Lock()
	recent := map[string]bool{}
	for name, at := range p.templateUsed {
		if now.Sub(at) <= ttl {
			recent[name] = true
		} else {
			delete(p.templateUsed, name)
		}
	}
	p.mu.Unlock()
	deleted, err := garbagecollect.LaunchTemplates(ctx, p.ec2, p.cluster.Name, launch.TemplateNamePrefix,
		func(name string) bool { return recent[name] }, now, ttl)
	for _, name := range deleted {
		p.templates.Invalidate(name)
	}
	return deleted, err
}
