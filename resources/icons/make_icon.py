# Draws the Strata icon (stacked strata with a falling loss curve) as a PNG, no dependencies.
import zlib, struct, math
N = 256
px = [[(0, 0, 0, 0)] * N for _ in range(N)]
def blend(x, y, c, a):
    if 0 <= x < N and 0 <= y < N:
        r, g, b, al = px[y][x]
        na = a + al * (1 - a)
        if na == 0: return
        px[y][x] = tuple(int((c[i] * a + (r, g, b)[i] * al * (1 - a)) / na) for i in range(3)) + (na,)
def inside_round(x, y, r=40, m=8):
    cx = min(max(x, m + r), N - 1 - m - r); cy = min(max(y, m + r), N - 1 - m - r)
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r and m <= x < N - m and m <= y < N - m
bands = [(38, 50, 72), (52, 78, 120), (70, 110, 170), (96, 150, 210)]
for y in range(N):
    for x in range(N):
        if inside_round(x, y):
            # wavy strata bands
            k = int((y + 10 * math.sin(x / 30.0)) / 64)
            blend(x, y, bands[min(max(k, 0), 3)], 1.0)
# loss curve: exponential decay, thick orange line
for t in range(0, 2000):
    x = 30 + t * 196 / 2000
    y = 60 + 140 * (1 - math.exp(-(x - 30) / 45.0))
    for dx in range(-6, 7):
        for dy in range(-6, 7):
            d = math.hypot(dx, dy)
            if d <= 6:
                blend(int(x + dx), int(y + dy), (255, 160, 40), min(1.0, 6.5 - d))
raw = b''.join(b'\x00' + b''.join(struct.pack('BBBB', r, g, b, int(a * 255)) for r, g, b, a in row) for row in px)
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', N, N, 8, 6, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw, 9)) + chunk(b'IEND', b'')
open('strata.png', 'wb').write(png)
