#include <vector>
#include <algorithm>
template <typename T> static inline T clamp(T v, T lo, T hi) { return std::max(lo, std::min(v, hi)); }
int main(int argc, char** argv) {
    std::vector<int> xs{3, 1, 4, 1, 5, 9, 2, 6};
    std::sort(xs.begin(), xs.end());
    for (auto it = xs.cbegin(); it != xs.cend(); ++it) { printf("%d\n", *it); }
    return argc > 1 ? EXIT_FAILURE : EXIT_SUCCESS; // done
}
