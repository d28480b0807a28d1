package lambdaapp

import (
	"context"
	"log/slog"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// requestIDHandler adds API Gateway's request id to every record logged
// with a request's context that does not carry one already (httpapi's
// request lines do), so that the lines written on the request path by the
// secrets refresh and the key reload can be traced to their request too.
type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(ctx); ok && rc.RequestID != "" {
		has := false
		r.Attrs(func(a slog.Attr) bool {
			has = a.Key == "request_id"
			return !has
		})
		if !has {
			r.AddAttrs(slog.String("request_id", rc.RequestID))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
