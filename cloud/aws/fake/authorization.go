package fake

import (
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/stevedore-autoscaler/stevedore/cloud/aws/iampolicy"
)

// Authorization returns the fake's account as the IAM policy evaluator sees
// it: the tags of its launch templates, instances and instance profiles and
// the roles of its profiles. Tests expand the calls the fake received into
// authorization requests with it (iampolicy.Account.Requests) and check them
// against a policy.
func (f *AWS) Authorization() iampolicy.Account {
	return iampolicy.Account{
		Partition: "aws", Region: f.opts.Region, AccountID: f.opts.AccountID,
		LaunchTemplate: func(name string) (map[string]string, *ec2types.RequestLaunchTemplateData, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			lt := f.findLaunchTemplate(name, name)
			if lt == nil {
				return nil, nil, false
			}
			data := clone(lt.data)
			return copyMap(lt.tags), &data, true
		},
		InstanceTags: func(id string) map[string]string {
			f.mu.Lock()
			defer f.mu.Unlock()
			if inst, ok := f.instances[id]; ok {
				return copyMap(inst.tags)
			}
			return nil
		},
		ProfileTags: func(name string) map[string]string {
			f.mu.Lock()
			defer f.mu.Unlock()
			if p, ok := f.profiles[name]; ok {
				return copyMap(p.tags)
			}
			return nil
		},
		ProfileRole: func(name string) string {
			f.mu.Lock()
			defer f.mu.Unlock()
			if p, ok := f.profiles[name]; ok && len(p.roles) > 0 {
				return f.roleARN(p.roles[0])
			}
			return ""
		},
		RoleARN: func(name string) string { return f.roleARN(name) },
	}
}
