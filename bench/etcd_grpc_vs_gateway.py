#!/usr/bin/python3
"""In-process latency of etcd's two front ends from one language (Python), same etcd, same record:
gRPC (python3-grpcio, etcd's own service /etcdserverpb.KV/Put|Range, messages serialized from
libsarena's etcd_gateway.proto, which keeps etcd's field numbers) vs HTTP/1.1 + JSON to the JSON
gateway on a kept-alive connection (http.client over the unix socket). The ratio says what the
gateway costs against gRPC without process start-up noise.
  etcd_grpc_vs_gateway.py SOCKET_PATH PB2_DIR [N]"""
import base64, http.client, json, socket, sys, time

sock_path, pb2_dir = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
sys.path.insert(0, pb2_dir)
import grpc  # noqa: E402
import etcd_gateway_pb2 as pb  # noqa: E402

VALUE = (b'{"name":"bench-node","node_id":42,"addresses":[{"family":"IPV4","address":"192.0.2.42"}],'
         b'"pod_cidrs":[{"family":"IPV4","cidr":"10.244.42.0/24"}],"tunnel_port":8472,"mtu":1500,'
         b'"routing_mode":"tunnel"}')
KEY = b"/bench/py"


def timeit(label, fn):
    for _ in range(50):
        fn()
    lat = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        lat.append(time.perf_counter_ns() - t0)
    lat.sort()
    print(f"{label:44s} p50 {lat[len(lat)//2]/1000:7.0f} us  p99 {lat[len(lat)*99//100]/1000:7.0f} us")


chan = grpc.insecure_channel("unix://" + sock_path)
put = chan.unary_unary("/etcdserverpb.KV/Put", request_serializer=pb.PutRequest.SerializeToString,
                       response_deserializer=pb.PutResponse.FromString)
rng = chan.unary_unary("/etcdserverpb.KV/Range", request_serializer=pb.RangeRequest.SerializeToString,
                       response_deserializer=pb.RangeResponse.FromString)
timeit("python gRPC put", lambda: put(pb.PutRequest(key=KEY, value=VALUE), timeout=5))
timeit("python gRPC range", lambda: rng(pb.RangeRequest(key=KEY), timeout=5))


class UnixHTTPConnection(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(sock_path)


conn = UnixHTTPConnection("localhost")
b64 = lambda b: base64.b64encode(b).decode()
put_body = json.dumps({"key": b64(KEY), "value": b64(VALUE)})
range_body = json.dumps({"key": b64(KEY)})


def post(path, body):
    conn.request("POST", path, body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    assert r.status == 200, data
    return json.loads(data)


timeit("python gateway put (HTTP/1.1 keep-alive)", lambda: post("/v3/kv/put", put_body))
timeit("python gateway range (HTTP/1.1 keep-alive)", lambda: post("/v3/kv/range", range_body))
