package validation

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/operation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// servedKind is one served version of one CRD, prepared the way the API
// server prepares it when it starts serving the CRD.
type servedKind struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	// structural is the structural schema with defaults pruned, as the server
	// uses it for pruning, defaulting and CEL.
	structural      *structuralschema.Structural
	schemaValidator apiservervalidation.SchemaValidator
	celValidator    *cel.Validator
	hasStatus       bool
	scale           *apiextensions.CustomResourceSubresourceScale
	// rules maps the message of every x-kubernetes-validations rule (or
	// "failed rule: <rule>" for rules without a message) to the rule, for fixes.
	rules map[string]apiextensions.ValidationRule
}

func newServedKind(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (*servedKind, error) {
	sk := &servedKind{
		gvk:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind},
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		rules:      map[string]apiextensions.ValidationRule{},
	}
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("CRD %s version %s has no schema", crd.Name, v.Name)
	}
	if crd.Spec.PreserveUnknownFields {
		return nil, fmt.Errorf("CRD %s sets preserveUnknownFields, which served CRDs must not", crd.Name)
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("CRD %s version %s: converting the schema: %w", crd.Name, v.Name, err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: the schema is not structural: %w", crd.Name, v.Name, err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("CRD %s version %s: pruning defaults: %w", crd.Name, v.Name, err)
	}
	sk.structural = s
	sk.schemaValidator, _, err = apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: building the schema validator: %w", crd.Name, v.Name, err)
	}
	sk.celValidator = cel.NewValidator(s, true, celconfig.PerCallLimit)
	collectRules(internal.OpenAPIV3Schema, sk.rules)

	if sub := v.Subresources; sub != nil {
		sk.hasStatus = sub.Status != nil
		if sub.Scale != nil {
			sk.scale = &apiextensions.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, sk.scale, nil); err != nil {
				return nil, fmt.Errorf("CRD %s version %s: converting the scale subresource: %w", crd.Name, v.Name, err)
			}
		}
	}
	return sk, nil
}

// collectRules indexes every CEL rule of a schema by the detail text the
// server reports when the rule fails.
func collectRules(p *apiextensions.JSONSchemaProps, into map[string]apiextensions.ValidationRule) {
	if p == nil {
		return
	}
	for _, r := range p.XValidations {
		if r.Message != "" {
			into[r.Message] = r
		} else {
			into["failed rule: "+strings.TrimSpace(r.Rule)] = r
		}
	}
	for k := range p.Properties {
		prop := p.Properties[k]
		collectRules(&prop, into)
	}
	if p.Items != nil {
		collectRules(p.Items.Schema, into)
		for i := range p.Items.JSONSchemas {
			collectRules(&p.Items.JSONSchemas[i], into)
		}
	}
	if p.AdditionalProperties != nil {
		collectRules(p.AdditionalProperties.Schema, into)
	}
	for _, list := range [][]apiextensions.JSONSchemaProps{p.AllOf, p.AnyOf, p.OneOf} {
		for i := range list {
			collectRules(&list[i], into)
		}
	}
}

// serverResult is what the server pipeline produced for one object.
type serverResult struct {
	// errs are the field errors in server order, with their severity.
	errs []checked
	// original is the object as written (a deep copy).
	original map[string]interface{}
	// object is the object after pruning and defaulting, as the server would
	// store it.
	object map[string]interface{}
}

// checked is a field error with the severity stevedore gives it and, for
// strict-decoding problems, the unknown field it names.
type checked struct {
	err          *field.Error
	severity     Severity
	unknownField string // set for "unknown field" problems
	decodeError  bool   // set when the server would fail to decode the object
	message      string // replaces err.ErrorBody() as the message when set
	fix          string // replaces the derived fix when set
}

// messageOf is the problem message for a checked error: the server's text
// after the field path.
func (c checked) messageOf() string {
	switch {
	case c.message != "":
		return c.message
	case c.unknownField != "":
		return fmt.Sprintf("unknown field %q", c.unknownField)
	case c.decodeError:
		return c.err.Detail
	case c.err.Field == "<nil>" && strings.HasPrefix(c.err.Detail, skippedRulesDetail):
		// The server's note carries no field and "Invalid value: null";
		// only its sentence means anything to a reader.
		return c.err.Detail
	}
	return c.err.ErrorBody()
}

// anyOfRE matches the OpenAPI validator's message for a value that fits none
// of the types of an anyOf (such as int-or-string), which the server reports
// without a field path.
var anyOfRE = regexp.MustCompile(`^"([^"]+)" must validate (at least one|one and only one) schema`)

// fieldOf is the problem field for a checked error. Where the server gives
// no path but its message names the field, the field is taken from the
// message.
func (c checked) fieldOf() string {
	if c.err == nil {
		return ""
	}
	if c.err.Field == "<nil>" || c.err.Field == "" {
		if m := anyOfRE.FindStringSubmatch(c.err.Detail); m != nil {
			return m[1]
		}
		return ""
	}
	return c.err.Field
}

// numberFormatRE matches the schema's complaint about a number outside its
// format (int32, int64), which names the field only inside the sentence.
var numberFormatRE = regexp.MustCompile(`^Checked value must be of type (integer|number) with format (int32|int64) in (\S+)$`)

// numberFormat rewrites a format error about a number too large or too small
// for its integer format: the field it is about, the value as written (the
// server's text shows an empty one) and the range to write instead.
func numberFormat(c checked, original map[string]interface{}) checked {
	if c.err == nil || (c.err.Field != "" && c.err.Field != "<nil>") {
		return c
	}
	m := numberFormatRE.FindStringSubmatch(c.err.Detail)
	if m == nil {
		return c
	}
	lo, hi := int64(math.MinInt32), int64(math.MaxInt32)
	if m[2] == "int64" {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	value := "the value"
	if v, ok := valueAt(original, m[3]); ok {
		if f, ok := v.(float64); ok {
			value = strconv.FormatFloat(f, 'g', -1, 64)
		} else {
			value = fmt.Sprint(v)
		}
	}
	e := *c.err
	e.Field = m[3]
	c.err = &e
	c.message = fmt.Sprintf("%s is not a whole number from %d to %d (%s)", value, lo, hi, m[2])
	c.fix = fmt.Sprintf("write a whole number from %d to %d that the field's own bounds allow", lo, hi)
	return c
}

// run applies the API server's create pipeline for a custom resource to obj:
// strict decoding (unknown fields), pruning, defaulting, PrepareForCreate,
// schema validation, embedded-resource and list-type validation, CEL rules,
// and object-metadata validation. Unlike the server, it does not stop at the
// first failing stage: unknown fields are reported and the pruned object is
// validated too, so that one run shows everything kubectl apply would
// eventually complain about.
func (sk *servedKind) run(ctx context.Context, in map[string]interface{}) serverResult {
	res := serverResult{original: runtime.DeepCopyJSON(in)}
	obj := runtime.DeepCopyJSON(in)

	// Decoding: the server keeps apiVersion, kind and metadata aside, prunes
	// the rest against the structural schema and collects the pruned paths.
	kind, foundKind, _ := unstructured.NestedString(obj, "kind")
	apiVersion, foundAPIVersion, _ := unstructured.NestedString(obj, "apiVersion")
	objectMeta, foundMeta, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		res.errs = append(res.errs, checked{
			err:         field.Invalid(field.NewPath("metadata"), omitted, fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", sk.gvk.Kind, sk.gvk.Version, sk.gvk.Kind, err)),
			severity:    SeverityError,
			decodeError: true,
		})
		// Carry on with what can be read, the way the server reads stored objects.
		objectMeta, foundMeta, _, _ = schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{DropMalformedFields: true})
	}
	unknown := append([]string(nil), metaUnknown...)
	unknown = append(unknown, structuralpruning.PruneWithOptions(obj, sk.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, sk.structural)
	if ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, obj, sk.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true}); ferr != nil {
		res.errs = append(res.errs, checked{err: ferr, severity: SeverityError, decodeError: true})
	} else {
		unknown = append(unknown, paths...)
	}
	if foundKind {
		obj["kind"] = kind
	}
	if foundAPIVersion {
		obj["apiVersion"] = apiVersion
	}
	if foundMeta && objectMeta != nil {
		if err := schemaobjectmeta.SetObjectMeta(obj, objectMeta); err != nil {
			res.errs = append(res.errs, checked{err: field.Invalid(field.NewPath("metadata"), omitted, err.Error()), severity: SeverityError, decodeError: true})
		}
	}
	for _, u := range unknown {
		res.errs = append(res.errs, checked{
			err:          &field.Error{Type: field.ErrorTypeNotSupported, Field: u, BadValue: omitted, Detail: fmt.Sprintf("unknown field %q", u)},
			severity:     SeverityError,
			unknownField: u,
		})
	}

	// Defaulting happens in the decoder, right after pruning.
	structuraldefaulting.Default(obj, sk.structural)

	// BeforeCreate: cluster-scoped objects lose their namespace, the name is
	// generated from generateName, PrepareForCreate drops status.
	u := &unstructured.Unstructured{Object: obj}
	if !sk.namespaced && u.GetNamespace() != "" {
		res.errs = append(res.errs, checked{
			err:      field.Invalid(field.NewPath("metadata", "namespace"), u.GetNamespace(), ""),
			severity: SeverityWarning,
			message:  fmt.Sprintf("%s is cluster-scoped; the API server ignores the namespace %q", sk.gvk.Kind, u.GetNamespace()),
		})
		u.SetNamespace("")
	}
	if u.GetName() == "" && u.GetGenerateName() != "" {
		res.errs = append(res.errs, checked{
			err:      field.Required(field.NewPath("metadata", "name"), ""),
			severity: SeverityWarning,
			message:  "kubectl apply needs metadata.name; the API server generates a name from generateName only for kubectl create",
			fix:      "set metadata.name, or create the object with kubectl create",
		})
		// Validate the rest as the server would, with a generated name.
		u.SetName(u.GetGenerateName() + "xxxxx")
	}
	if sk.hasStatus {
		if _, ok := obj["status"]; ok {
			res.errs = append(res.errs, checked{
				err:      field.Invalid(field.NewPath("status"), omitted, ""),
				severity: SeverityWarning,
				message:  "the API server drops status when it creates the object",
				fix:      "remove status from the manifest; stevedore writes it",
			})
			delete(obj, "status")
		}
	}
	res.object = obj

	// Validate, in the order of customResourceStrategy.Validate.
	var errs field.ErrorList
	errs = append(errs, sk.validateObjectMeta(ctx, obj)...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, sk.schemaValidator)...)
	errs = append(errs, sk.validateScaleSpec(obj)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, sk.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, sk.structural, obj)...)
	if sk.celValidator != nil {
		if blocking := hasBlockingErr(errs); blocking != nil {
			res.errs = append(res.errs, checked{err: blocking, severity: SeverityWarning})
		} else {
			celErrs, _ := sk.celValidator.Validate(ctx, nil, sk.structural, obj, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
	}
	for _, e := range errs {
		res.errs = append(res.errs, checked{err: e, severity: SeverityError})
	}

	// Storage refuses objects that carry a resourceVersion on create.
	if rv := u.GetResourceVersion(); rv != "" {
		res.errs = append(res.errs, checked{
			err:      field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, ""),
			severity: SeverityError,
			message:  "resourceVersion should not be set on objects to be created",
		})
	}
	// WarningsOnCreate: finalizer names.
	for i, f := range u.GetFinalizers() {
		for _, w := range finalizerWarnings(f) {
			res.errs = append(res.errs, checked{
				err:      field.Invalid(field.NewPath("metadata", "finalizers").Index(i), f, w),
				severity: SeverityWarning,
			})
		}
	}
	return res
}

// omitted is the bad value of errors whose message carries the value itself.
var omitted = field.OmitValueType{}

// validateObjectMeta is customResourceValidator.validateObjectMetaDeclaratively
// for a create.
func (sk *servedKind) validateObjectMeta(ctx context.Context, obj map[string]interface{}) field.ErrorList {
	meta := &metav1.ObjectMeta{}
	if raw, ok := obj["metadata"]; ok && raw != nil {
		m, ok := raw.(map[string]interface{})
		if !ok {
			return field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta); err != nil {
			return field.ErrorList{field.Invalid(field.NewPath("metadata"), raw, err.Error())}
		}
	}
	return apimachineryvalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, meta, nil, sk.namespaced,
		apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"),
		utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))
}

// validateScaleSpec is customResourceValidator.ValidateScaleSpec.
func (sk *servedKind) validateScaleSpec(obj map[string]interface{}) field.ErrorList {
	if sk.scale == nil {
		return nil
	}
	p := strings.TrimPrefix(sk.scale.SpecReplicasPath, ".")
	replicas, _, err := unstructured.NestedInt64(obj, strings.Split(p, ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(sk.scale.SpecReplicasPath), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(sk.scale.SpecReplicasPath), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(sk.scale.SpecReplicasPath), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

// skippedRulesDetail starts the server's note that CEL rules were skipped.
const skippedRulesDetail = "some validation rules were not checked"

// hasBlockingErr mirrors the server: CEL rules are not evaluated when the
// object has errors that make their input unreliable.
func hasBlockingErr(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, skippedRulesDetail+" because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

var standardFinalizers = sets.New(metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents, "kubernetes")

// finalizerWarnings are the warnings the server attaches to a create for a
// finalizer name.
func finalizerWarnings(name string) []string {
	var out []string
	out = append(out, utilvalidation.IsQualifiedName(name)...)
	if !strings.Contains(name, "/") && !standardFinalizers.Has(name) {
		if strings.Contains(name, ".") {
			out = append(out, "prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers")
		} else {
			out = append(out, "prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers")
		}
	}
	return out
}
