// Key Vault in RBAC mode, soft delete and purge protection on, for the extractor tokens.
// Secrets are set by the operator (az keyvault secret set), never passed through parameters or outputs.
param location string
param namePrefix string
param tags object
param tenantId string = subscription().tenantId

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  // checkov:skip=CKV_AZURE_109: firewall default-deny would lock out Flex Consumption apps without VNet integration; access is RBAC-only.
  // checkov:skip=CKV_AZURE_189: the app reads secrets over the public endpoint without VNet integration; RBAC-only access, no access policies.
  // checkov:skip=CKV2_AZURE_32: private endpoints need VNet integration, which this template does not deploy.
  name: take('kv-${namePrefix}-${uniqueString(resourceGroup().id, namePrefix)}', 24)
  location: location
  tags: tags
  properties: {
    tenantId: tenantId
    sku: { family: 'A', name: 'standard' }
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 90
    enablePurgeProtection: true
    publicNetworkAccess: 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: 'Allow'
    }
  }
}

output name string = vault.name
output uri string = vault.properties.vaultUri
