package moto

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/stevedore-autoscaler/stevedore/test/moto/wire"
)

// callKey carries a request's wire.Call to the answer's handler.
type callKey struct{}

// fleetAnswer is the part of CreateFleet's answer that says which
// instances were launched from which launch template version.
type fleetAnswer struct {
	Instances []struct {
		Template struct {
			ID      string `xml:"launchTemplateId"`
			Name    string `xml:"launchTemplateName"`
			Version string `xml:"version"`
		} `xml:"launchTemplateAndOverrides>launchTemplateSpecification"`
		IDs []string `xml:"instanceIds>item"`
	} `xml:"fleetInstanceSet>item"`
}

// complete is the reverse proxy's ModifyResponse: after a successful
// CreateFleet it gives the instances what their launch template says and
// moto leaves out, before the controller sees the answer.
func (p *Proxy) complete(resp *http.Response) error {
	call, _ := resp.Request.Context().Value(callKey{}).(wire.Call)
	if call.Service != "EC2" || call.Operation != "CreateFleet" || resp.StatusCode != http.StatusOK {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err == nil {
		err = p.completeFleet(body)
	}
	if err != nil {
		p.mu.Lock()
		p.fleetErrors = append(p.fleetErrors, err)
		p.mu.Unlock()
	}
	return nil
}

// FleetErrors returns the CreateFleet answers the proxy could not complete.
func (p *Proxy) FleetErrors() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.fleetErrors)
}

func (p *Proxy) completeFleet(body []byte) error {
	var ans fleetAnswer
	if err := xml.Unmarshal(body, &ans); err != nil {
		return fmt.Errorf("reading CreateFleet's answer: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	for _, in := range ans.Instances {
		lt := &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{in.Template.Version}}
		if in.Template.ID != "" {
			lt.LaunchTemplateId = aws.String(in.Template.ID)
		} else {
			lt.LaunchTemplateName = aws.String(in.Template.Name)
		}
		out, err := p.ec2.DescribeLaunchTemplateVersions(ctx, lt)
		if err != nil || len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
			return fmt.Errorf("launch template %s%s version %s of instances %v: %v", in.Template.ID, in.Template.Name, in.Template.Version, in.IDs, err)
		}
		data := out.LaunchTemplateVersions[0].LaunchTemplateData
		groups := slices.Clone(data.SecurityGroupIds)
		for _, ni := range data.NetworkInterfaces {
			groups = append(groups, ni.Groups...)
		}
		for _, id := range in.IDs {
			if len(groups) > 0 {
				if _, err := p.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id), Groups: groups}); err != nil {
					return fmt.Errorf("giving instance %s the security groups %v of its launch template: %w", id, groups, err)
				}
			}
			if prof := data.IamInstanceProfile; prof != nil && (prof.Name != nil || prof.Arn != nil) {
				spec := &ec2types.IamInstanceProfileSpecification{Name: prof.Name, Arn: prof.Arn}
				if _, err := p.ec2.AssociateIamInstanceProfile(ctx, &ec2.AssociateIamInstanceProfileInput{InstanceId: aws.String(id), IamInstanceProfile: spec}); err != nil {
					return fmt.Errorf("giving instance %s the instance profile of its launch template: %w", id, err)
				}
			}
		}
	}
	return nil
}

// lookupTimeout bounds each read or write of moto's state the proxy or an
// Authorizer makes for a call.
const lookupTimeout = 10 * time.Second
