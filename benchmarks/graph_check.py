import torch, importlib.util
spec = importlib.util.spec_from_file_location("ex01", "examples/01_vector_add.py"); ex = importlib.util.module_from_spec(spec); spec.loader.exec_module(ex)
n = 1 << 20
a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"); c = torch.zeros_like(a)
ex.vector_add(a, b, c, n); torch.cuda.synchronize()
c.zero_()
g = torch.cuda.CUDAGraph(); s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    with torch.cuda.graph(g, stream=s):
        ex.vector_add(a, b, c, n)
c.zero_(); g.replay(); torch.cuda.synchronize()
print("graph capture with the default stream:", "PASS" if torch.equal(c, a + b) else "FAIL")
