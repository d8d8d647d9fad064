package metrics

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Server serves a handler at /metrics on a listening socket.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Serve listens on addr (HOST:PORT; port 0 picks a free one) and serves h at /metrics
// in the background. The listen error, if any, is returned at once, so a taken port
// stops the command before any probe.
func Serve(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, "/metrics", http.StatusFound)
	})
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// Serve fails only when the listener does after the start: the scrapes then
		// fail, and the command goes on measuring.
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the address the server listens on (with the port picked for port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the metrics' address, e.g. http://127.0.0.1:9187/metrics.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Close stops the server, letting scrapes in progress finish for up to a second.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}
