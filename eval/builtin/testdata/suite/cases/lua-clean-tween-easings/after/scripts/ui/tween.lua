-- tween.lua - small tweening helper for UI widgets.

local Tween = {}
Tween.__index = Tween

local easings = {
    linear = function(t) return t end,
    inQuad = function(t) return t * t end,
    outQuad = function(t) return t * (2 - t) end,
    inOutCubic = function(t)
        if t < 0.5 then
            return 4 * t * t * t
        end
        local f = 2 * t - 2
        return 0.5 * f * f * f + 1
    end,
    outBack = function(t)
        local s = 1.70158
        local f = t - 1
        return f * f * ((s + 1) * f + s) + 1
    end,
}

function Tween.new(target, field, to, duration, easing)
    assert(easings[easing or "linear"], "unknown easing: " .. tostring(easing))
    local self = setmetatable({}, Tween)
    self.target = target
    self.field = field
    self.from = target[field]
    self.to = to
    self.duration = duration
    self.elapsed = 0
    self.ease = easings[easing or "linear"]
    self.done = false
    self.onComplete = nil
    return self
end

-- whenDone registers fn to run once, right after the final value is set.
function Tween:whenDone(fn)
    self.onComplete = fn
    return self
end

function Tween:update(dt)
    if self.done then
        return true
    end
    self.elapsed = self.elapsed + dt
    local t = self.duration > 0 and self.elapsed / self.duration or 1
    if t >= 1 then
        t = 1
        self.done = true
    end
    self.target[self.field] = self.from + (self.to - self.from) * self.ease(t)
    if self.done and self.onComplete then
        local fn = self.onComplete
        self.onComplete = nil
        fn(self.target)
    end
    return self.done
end

return Tween
