#!/usr/bin/env python3
"""A loopback webhook receiver for the demo: appends each POSTed alert body
as one line to the file given, and answers 204."""
import http.server
import json
import sys

OUT = sys.argv[2]


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            line = json.dumps(json.loads(body))
        except ValueError:
            line = json.dumps({"unparsed": body.decode("utf-8", "replace")})
        with open(OUT, "a") as f:
            f.write(line + "\n")
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Receiver).serve_forever()
