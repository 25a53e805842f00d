package runner

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stevedore-autoscaler/stevedore/sim/apiserver"
	"github.com/stevedore-autoscaler/stevedore/state"
	"github.com/stevedore-autoscaler/stevedore/state/informer"
)

// stateFeed keeps a state.Cluster current from the API's changes through
// the same event handlers the controller's informers call (package
// state/informer registers them here instead of on a cache), so that the
// objects the state holds, and the methods that put them there, are the
// production ones.
type stateFeed struct {
	handlers map[schema.GroupVersionKind][]toolscache.ResourceEventHandler
}

// newStateFeed registers st's handlers and replays every stored object to
// them, as an informer's initial list would.
func newStateFeed(api *apiserver.Server, st *state.Cluster, nodeOverlays bool) (*stateFeed, error) {
	f := &stateFeed{handlers: map[schema.GroupVersionKind][]toolscache.ResourceEventHandler{}}
	if err := informer.RegisterInformers(context.Background(), &informers{api: api, feed: f}, st); err != nil {
		return nil, err
	}
	if nodeOverlays {
		if err := informer.RegisterNodeOverlays(context.Background(), &informers{api: api, feed: f}, st); err != nil {
			return nil, err
		}
	}
	for _, gvk := range api.Kinds() {
		for _, h := range f.handlers[gvk] {
			for _, o := range api.Objects(gvk) {
				h.OnAdd(o, true)
			}
		}
	}
	return f, nil
}

// change delivers one change to the handlers of its kind.
func (f *stateFeed) change(c apiserver.Change) {
	for _, h := range f.handlers[c.GVK] {
		switch c.Type {
		case apiserver.Added:
			h.OnAdd(c.Object, false)
		case apiserver.Modified:
			h.OnUpdate(c.Old, c.Object)
		case apiserver.Deleted:
			h.OnDelete(c.Object)
		}
	}
}

// informers implements cache.Informers far enough for
// informer.RegisterInformers: GetInformer and AddEventHandler. Other methods
// are not used and panic.
type informers struct {
	cache.Informers
	api  *apiserver.Server
	feed *stateFeed
}

func (i *informers) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, err := i.api.KindOf(obj)
	if err != nil {
		return nil, fmt.Errorf("state informer for %T: %w", obj, err)
	}
	return &handlerSink{feed: i.feed, gvk: gvk}, nil
}

type handlerSink struct {
	cache.Informer
	feed *stateFeed
	gvk  schema.GroupVersionKind
}

func (h *handlerSink) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	h.feed.handlers[h.gvk] = append(h.feed.handlers[h.gvk], handler)
	return nil, nil
}
