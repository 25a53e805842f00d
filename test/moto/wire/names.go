package wire

import (
	"reflect"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// EC2's query protocol keys a member by its EC2 query name, not by the Go
// field name the SDK generates from the member name. The two differ in two
// ways for the inputs this package decodes (found by reading the SDK's
// awsEc2query_serializeDocument* functions for every structure reachable
// from them):
//
//   - A list is usually keyed by the singular of its Go name:
//     TagSpecifications goes as TagSpecification.1, InstanceIds as
//     InstanceId.1, Ipv4Prefixes as Ipv4Prefix.1. Some lists keep their
//     plural (LaunchTemplateConfigs, Overrides, PrivateIpAddresses of a
//     network interface), which the exact-name rule covers. Accepting the
//     plural of every list is lenient but loses nothing: a list sent under
//     both names is an error.
//   - A few names are unrelated: ec2Renames.
//
// AWS query (IAM, STS) keys members by their Go names exactly.

// ec2Renames are the members whose EC2 query name is neither their Go name
// nor its singular, by the structure that holds them: EC2 query name to Go
// field name. A decoded operation whose inputs reach another such member
// fails to decode with an error naming the key, and belongs here.
var ec2Renames = map[reflect.Type]map[string]string{
	reflect.TypeFor[ec2.CreateTagsInput](): {
		"ResourceId": "Resources",
	},
	reflect.TypeFor[ec2types.InstanceNetworkInterfaceSpecification](): {
		"SecurityGroupId": "Groups",
	},
	reflect.TypeFor[ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest](): {
		"SecurityGroupId": "Groups",
	},
}

// field is the field of struct type t that the form key segment name
// stands for.
func (d decoder) field(t reflect.Type, name string) (reflect.StructField, bool) {
	if d.ec2 {
		if goName, ok := ec2Renames[t][name]; ok {
			return t.FieldByName(goName)
		}
	}
	if f, ok := t.FieldByName(name); ok && f.IsExported() {
		return f, true
	}
	if d.ec2 {
		for _, plural := range []string{name + "s", name + "es"} {
			if f, ok := t.FieldByName(plural); ok && f.IsExported() && f.Type.Kind() == reflect.Slice {
				return f, true
			}
		}
	}
	return reflect.StructField{}, false
}
