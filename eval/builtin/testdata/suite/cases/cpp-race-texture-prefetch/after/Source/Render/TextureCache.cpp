// TextureCache.cpp
#include "TextureCache.h"

#include "Core/JobSystem.h"
#include "Core/Log.h"

namespace render {

TextureCache::TextureCache(AssetStore& store) : store_(store) {}

TextureCache::~TextureCache() { Clear(); }

std::shared_ptr<Texture> TextureCache::Load(const std::string& path) {
    auto bytes = store_.Read(path);
    if (!bytes) {
        LOG_WARN("texture {} missing, using checkerboard", path);
        return Texture::Checkerboard();
    }
    return Texture::Decode(*bytes);
}

std::shared_ptr<Texture> TextureCache::Get(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = textures_.find(path);
    if (it != textures_.end()) {
        return it->second;
    }
    auto tex = Load(path);
    textures_.emplace(path, tex);
    return tex;
}

void TextureCache::Prefetch(const std::vector<std::string>& paths) {
    JobSystem::Submit([this, paths] {
        for (const auto& path : paths) {
            if (textures_.count(path) != 0) {
                continue;
            }
            auto tex = Load(path);
            textures_.emplace(path, std::move(tex));
        }
    });
}

void TextureCache::Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    textures_.clear();
}

}  // namespace render
