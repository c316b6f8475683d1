// MathUtil.h - small helpers shared by gameplay and animation code.
#pragma once

#include <cmath>

#include "Math/Vector3.h"

namespace math {

constexpr float kPi = 3.14159265358979323846f;
constexpr float kEpsilon = 1e-6f;

inline float DegToRad(float deg) { return deg * (kPi / 180.0f); }
inline float RadToDeg(float rad) { return rad * (180.0f / kPi); }

inline bool NearlyEqual(float a, float b, float eps = kEpsilon) {
    return std::fabs(a - b) <= eps;
}

template <typename T>
constexpr T Clamp(T v, T lo, T hi) {
    return v < lo ? lo : (hi < v ? hi : v);
}

inline float Lerp(float a, float b, float t) { return a + (b - a) * t; }

// Where v lies between a and b, 0 at a and 1 at b; 0 when a == b.
inline float InverseLerp(float a, float b, float v) {
    return NearlyEqual(a, b) ? 0.0f : (v - a) / (b - a);
}

// Moves current towards target like a critically damped spring that takes
// about smoothTime seconds; velocity is the caller's state between frames.
inline float SmoothDamp(float current, float target, float& velocity, float smoothTime, float dt) {
    smoothTime = smoothTime < 1e-4f ? 1e-4f : smoothTime;
    const float omega = 2.0f / smoothTime;
    const float x = omega * dt;
    const float decay = 1.0f / (1.0f + x + 0.48f * x * x + 0.235f * x * x * x);
    const float change = current - target;
    const float temp = (velocity + omega * change) * dt;
    velocity = (velocity - omega * temp) * decay;
    float result = target + (change + temp) * decay;
    // Never overshoot: if we passed the target, stop on it.
    if ((target - current > 0.0f) == (result > target)) {
        result = target;
        velocity = 0.0f;
    }
    return result;
}

inline Vector3 Lerp(const Vector3& a, const Vector3& b, float t) {
    return Vector3{Lerp(a.x, b.x, t), Lerp(a.y, b.y, t), Lerp(a.z, b.z, t)};
}

}  // namespace math
